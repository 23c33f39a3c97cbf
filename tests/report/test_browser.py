"""The report renders in a real headless browser: every plot image decodes and the page is not blank."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ortgpu.report.html import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")

# Added to a copy of the page only: after load, records how many images decoded into the DOM.
_PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 100 && i.naturalHeight > 100).length;
  document.body.setAttribute('data-images', imgs.length + '/' + ok);
});
</script></body>"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1200,2400",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_plot_decodes_in_the_browser(tmp_path: Path, gpu_like_result) -> None:
    page = write_report(gpu_like_result, tmp_path / "report.html").read_text(encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", _PROBE), encoding="utf-8")
    done = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'data-images="5/5"' in done.stdout


def test_screenshot_shows_content(tmp_path: Path, gpu_like_result) -> None:
    from matplotlib.image import imread

    report = write_report(gpu_like_result, tmp_path / "report.html")
    shot = tmp_path / "shot.png"
    done = _chromium(tmp_path, f"--screenshot={shot}", report.as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    not_white = (pixels < 0.94).any(axis=2).mean()
    assert not_white > 0.05  # tables and plots cover a good part of the page
    colours = {tuple(p) for p in (pixels[::7, ::7].reshape(-1, 3) * 255).astype(int)}
    assert len(colours) > 50  # plot lines and boxes, not only black text
