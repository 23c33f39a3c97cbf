"""Names from models and packages never style, link, move the cursor or stall the terminal (issue 17, item 7).

An input called ``[/]`` crashed the table (exit 70); ``[link=...]`` rendered as a link; raw CSI/OSC escapes in
names or VERSION_NUMBER reached the terminal; a 120 KB name took ``check`` 10 s and a long version string took
``doctor --package`` over 120 s. ``FORCE_COLOR`` makes rich write as it would to a terminal.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_libs import build_lib, needs_gcc

from ortgpu.cli.output import CELL_LIMIT, plain, safe

CHECK = ["check", "--ep", "cpu", "--warm-runs", "1"]
OSC_LINK = "\x1b]8;;https://evil.example/\x1b\\"
CSI_RED = "\x1b[31m"
CLEAR_SCREEN = "\x1b[2J"


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make rich render as for a colour terminal (links and styles on), whatever captures the output."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)


def test_an_input_named_closing_tag_is_shown_literally(cli: Callable[..., object], model_with) -> None:
    outcome = cli(*CHECK, str(model_with([("[/]", [1, 4])])))
    assert outcome.rc == 0, outcome.err
    assert "input [/]: float32 [1, 4]" in outcome.out


def test_link_markup_in_a_name_is_text_not_a_link(cli: Callable[..., object], model_with, terminal: None) -> None:
    name = "[link=https://evil.example/]click[/link]"
    outcome = cli(*CHECK, str(model_with([(name, [1, 4])])))
    assert outcome.rc == 0, outcome.err
    assert name in outcome.out
    assert "\x1b]8;" not in outcome.out  # no OSC 8 hyperlink reached the "terminal"
    assert "\x1b[" in outcome.out  # the terminal mode is on: ortgpu's own styles are there


def test_escape_sequences_in_names_are_shown_not_sent(cli: Callable[..., object], model_with, terminal: None) -> None:
    name = f"a{OSC_LINK}b{CSI_RED}red{CLEAR_SCREEN}\u202eevil"
    outcome = cli(*CHECK, str(model_with([(name, [1, 4])], outputs=[f"out{CSI_RED}"])))
    assert outcome.rc == 0, outcome.err
    for sequence in (OSC_LINK, CSI_RED, CLEAR_SCREEN, "\u202e"):
        assert sequence not in outcome.out
    assert "\\x1b]8;;https://evil.example/\\x1b\\" in outcome.out and "\\u202e" in outcome.out


def test_escape_sequences_never_reach_stderr(cli: Callable[..., object], model_with) -> None:
    model = model_with([(f"x{CLEAR_SCREEN}{CSI_RED}", ["N", "height"])])
    line = cli(*CHECK, str(model)).assert_one_line_error(2)  # "height" is not fixed by any flag
    assert "\x1b" not in line and "\\x1b[2J" in line


def test_a_120_kb_name_is_fast_shortened_in_the_table_and_whole_in_json(cli: Callable[..., object], model_with) -> None:
    name = "n" * 120_000
    model = model_with([(name, [1, 4])])
    start = time.perf_counter()
    outcome = cli(*CHECK, str(model))
    seconds = time.perf_counter() - start
    assert outcome.rc == 0, outcome.err
    assert seconds < 3, f"check took {seconds:.1f} s with a 120 KB name"
    assert len(outcome.out) < 20_000 and "more characters]" in outcome.out
    doc = json.loads(cli(*CHECK, str(model), "--json").out)
    assert doc["result"]["inputs"][0]["name"] == name


@needs_gcc
def test_a_hostile_version_number_in_a_package(cli: Callable[..., object], tmp_path: Path, terminal: None) -> None:
    package = tmp_path / "pkg"
    build_lib(package / "lib" / "libonnxruntime.so.1.20.0", soname="libonnxruntime.so.1.20.0")
    version = f"1.20.0{OSC_LINK}[link=https://evil.example/]x[/link][/]{CSI_RED}" + "v" * 200_000
    (package / "VERSION_NUMBER").write_text(version, encoding="utf-8")
    start = time.perf_counter()
    outcome = cli("doctor", "--package", str(package))
    seconds = time.perf_counter() - start
    assert outcome.rc in (0, 3), outcome.err
    assert seconds < 5, f"doctor --package took {seconds:.1f} s with a long VERSION_NUMBER"
    assert OSC_LINK not in outcome.out and CSI_RED not in outcome.out and "\x1b]8;" not in outcome.out
    assert "[link=https://evil.example/]x[/link][/]" in outcome.out
    assert "v" * 5000 not in outcome.out and "more characters]" in outcome.out


def test_explain_shows_a_hostile_paste_literally(cli: Callable[..., object], terminal: None) -> None:
    paste = f"CUDA driver version is insufficient [/] {OSC_LINK}[link=https://evil.example/]x[/link]"
    outcome = cli("explain", paste)
    assert outcome.rc in (0, 1), outcome.err
    assert OSC_LINK not in outcome.out and "\x1b]8;" not in outcome.out


def test_a_model_file_name_with_markup_in_bench(cli: Callable[..., object], tmp_path: Path) -> None:
    from ortgpu.model.zoo import build_tiny_model

    model = build_tiny_model(tmp_path / "[blink]x[red].onnx")
    outcome = cli("bench", str(model), "--ep", "cpu", "--iterations", "3", "--warmup", "1")
    assert outcome.rc == 0, outcome.err
    assert "[blink]x[red].onnx" in outcome.out


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("[/]", "\\[/]"),
        ("[link=https://x]y[/link]", "\\[link=https://x]y\\[/link]"),
        ("tail\\", "tail\\\\"),  # a trailing backslash must not escape the tag put after it
        ("a\x1b[31mb", "a\\x1b[31mb"),  # "[31m" is no rich tag: left as it is
        ("bell\x07", "bell\\x07"),
        ("two\nlines\ttab", "two lines tab"),
        ("rtl\u202eoverride", "rtl\\u202eoverride"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("café ✓ 日本", "café ✓ 日本"),
    ],
)
def test_safe_text(text: str, shown: str) -> None:
    assert safe(text) == shown


def test_safe_text_survives_rich_markup_wherever_it_is_put() -> None:
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), width=200, highlight=False)
    for text in ("[/]", "a\\", "[bold", "]]]", "\\[x]", "[link=x]", "[/bold]"):
        console.print(f"[bold]{safe(text)}[/] and [dim]{safe(text)}[/]")
    printed = console.file.getvalue()
    assert "[/]" in printed and "a\\ and" in printed


def test_long_text_is_cut_in_the_middle_with_a_note() -> None:
    text = "a" * 100 + "b" * 10_000 + "z" * 100
    shown = plain(text, CELL_LIMIT)
    assert len(shown) <= CELL_LIMIT + 40
    assert shown.startswith("a" * 50) and shown.endswith("z" * 20)
    assert "more characters]" in shown


@pytest.mark.parametrize("command", [["inspect"], ["profile", "--ep", "cpu", "--runs", "2"]])
def test_hostile_names_in_inspect_and_profile(
    cli: Callable[..., object],
    model_with,
    terminal: None,
    command: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # profile writes its trace next to where it runs
    name = f"[link=https://evil.example/]x[/link]{OSC_LINK}{CSI_RED}[/]"
    model = model_with([(name, [1, 4])], outputs=[f"y{CLEAR_SCREEN}"])
    outcome = cli(command[0], str(model), *command[1:])
    assert outcome.rc == 0, outcome.err
    assert "\x1b]8;" not in outcome.out and CSI_RED not in outcome.out and CLEAR_SCREEN not in outcome.out
    if command[0] == "inspect":  # profile's tables show node and op names, not input names
        assert "[link=https://evil.example/]x[/link]" in outcome.out
