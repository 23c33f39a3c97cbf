"""Option groups shared by commands, declared once: check, bench, fp16, compare, debug reduce and profile.

Each group is a decorator adding its options; the command receives the values already parsed by the types of
:mod:`ortgpu.cli.params`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ortgpu.cli.params import DIM, EP, EP_OPTION, RANGE, SHAPE, WholeNumber
from ortgpu.model.inputs import InputSpec, merge_input_spec

__all__ = ["ep_options", "model_input_options"]

F = TypeVar("F", bound=Callable[..., Any])


def _apply(function: F, options: list[Callable[[F], F]]) -> F:
    for option in reversed(options):
        function = option(function)
    return function


def model_input_options(function: F) -> F:
    """--shape, --dim, --range, --inputs, --seed: how the model's inputs are built (docs/inputs.md).

    The command gets ``shapes`` / ``dims`` / ``ranges`` as tuples of parsed (name, value) pairs, ``npz`` and
    ``seed`` (None when not given).
    """
    return _apply(
        function,
        [
            click.option("--shape", "shapes", type=SHAPE, multiple=True, metavar="NAME=1x3x224x224",
                         help="Input shape (repeatable)."),
            click.option("--dim", "dims", type=DIM, multiple=True, metavar="SYMBOL=N",
                         help="Value of a named symbolic dim (repeatable)."),
            click.option("--range", "ranges", type=RANGE, multiple=True, metavar="NAME=LOW,HIGH",
                         help="Value range of generated data (repeatable)."),
            click.option("--inputs", "npz", type=click.Path(path_type=Path),
                         help="Real input data: an .npz named after the inputs (check, fp16, compare: also a data "
                         "set, a folder of .npz or arrays with a sample axis first)."),
            click.option("--seed", type=WholeNumber(0), metavar="N", help="Seed of generated inputs (default 0)."),
        ],
    )  # fmt: skip


def input_spec(base: InputSpec, shapes: Any, dims: Any, ranges: Any, npz: Path | None, seed: int | None) -> InputSpec:
    """The model-input group's values (see :func:`model_input_options`) laid over the config's ``[inputs]``."""
    return merge_input_spec(base, shapes=dict(shapes), dims=dict(dims), ranges=dict(ranges), npz=npz, seed=seed)


def ep_options(*, ep_help: str, device_default: int | None, device_help: str) -> Callable[[F], F]:
    """--ep, --ep-option, --device: the execution provider, its options and the CUDA device.

    The command gets ``ep`` (an ExecutionProvider or None), ``ep_options`` (parsed (key, value) pairs) and
    ``device_id``.
    """

    def decorate(function: F) -> F:
        return _apply(
            function,
            [
                click.option("--ep", "ep", type=EP, metavar="EP", help=ep_help),
                click.option("--ep-option", "ep_options", type=EP_OPTION, multiple=True, metavar="KEY=VALUE",
                             help="Provider option (repeatable)."),
                click.option("--device", "device_id", type=WholeNumber(0), default=device_default,
                             show_default=device_default is not None, metavar="N", help=device_help),
            ],
        )  # fmt: skip

    return decorate
