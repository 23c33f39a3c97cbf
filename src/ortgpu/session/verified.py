"""Strict sessions: the requested EP is the active one, or the build fails with the cause (or falls back, recorded)."""

from __future__ import annotations

import difflib
import os
import time
import uuid
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortgpu.config import Config, ConfigError, Fallback, load_config
from ortgpu.ep import ExecutionProvider
from ortgpu.errors import EnvironmentUnfitError
from ortgpu.model.inputs import InputError, InputSpec, make_inputs
from ortgpu.model.inspect import ModelError, ModelInfo, inspect_model
from ortgpu.placement import PlacementReport, parse_verbose_log
from ortgpu.runtime.guard import import_onnxruntime
from ortgpu.runtime.preload import ensure_preloaded
from ortgpu.session.capture import capture_native_stderr
from ortgpu.session.failures import (
    Phase,
    ProviderUnavailableError,
    ort_exception_types,
    translate_ort_error,
)
from ortgpu.session.options import VERBOSE, build_session_options, device_of, provider_chain, run_options
from ortgpu.session.providers import (
    best_available_ep,
    cause_from_log,
    inactive_provider_error,
    missing_from_build_error,
)
from ortgpu.settings import INT_CEILING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import onnxruntime

__all__ = ["LOAD_OVERRIDES", "VerifiedSession", "load", "open_session"]


class VerifiedSession:
    """An onnxruntime session whose active EP was checked against the requested one.

    ``ort`` is the InferenceSession itself; ``run`` validates the feeds, times the run (``last_run_s``) and turns
    ORT's exceptions into ortgpu errors. ``fallback_used`` is True only when the config allowed a CPU fallback
    and it happened; ``fallback_reason`` then says why.
    """

    def __init__(
        self,
        *,
        ort: onnxruntime.InferenceSession,
        model: ModelInfo,
        requested_ep: ExecutionProvider,
        active_ep: ExecutionProvider,
        providers: list[str],
        provider_options: dict[str, str],
        device_id: int,
        creation_s: float,
        config: Config,
        ep_reason: str | None = None,
        fallback_used: bool = False,
        fallback_reason: str | None = None,
        placement: PlacementReport | None = None,
        placement_note: str | None = None,
        build_log: str = "",
        cuda_libraries: str | None = None,
    ) -> None:
        self.ort = ort
        self.model = model
        self.requested_ep = requested_ep
        self.active_ep = active_ep
        self.providers = providers
        self.provider_options = provider_options
        self.device_id = device_id
        self.creation_s = creation_s
        self.config = config
        self.ep_reason = ep_reason
        self.fallback_used = fallback_used
        self.fallback_reason = fallback_reason
        self.placement = placement
        self.placement_note = placement_note
        self.build_log = build_log  # what ORT logged while the session was built (captured, not printed)
        self.cuda_libraries = cuda_libraries  # GPU EPs: how CUDA/cuDNN were loaded (ortgpu.runtime.preload)
        self.last_run_s: float | None = None
        self.warmup_s: tuple[float, ...] = ()
        self.warmup_shapes: dict[str, tuple[int, ...]] = {}
        self._run_options = run_options(config)

    # -- running ----------------------------------------------------------------------------------------------

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.ort.get_inputs())

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.ort.get_outputs())

    def run(self, feeds: Mapping[str, np.ndarray], output_names: Sequence[str] | None = None) -> list[np.ndarray]:
        """Run once; outputs in ``output_names`` order (default: every output, in the model's order)."""
        if self.ort is None:
            raise ConfigError("this session is closed", "open a new one with ortgpu.load()")
        self._check_feeds(feeds)
        start = time.perf_counter()
        outputs = self._run_impl(feeds, output_names)
        self.last_run_s = time.perf_counter() - start
        return outputs

    def _run_impl(self, feeds: Mapping[str, np.ndarray], output_names: Sequence[str] | None) -> list[np.ndarray]:
        ort = import_onnxruntime()

        try:
            return self.ort.run(list(output_names) if output_names else None, dict(feeds), self._run_options)
        except ort_exception_types() as exc:
            raise translate_ort_error(exc, Phase.RUN, self.active_ep, ort.__version__) from None

    def to_device(self, feeds: Mapping[str, np.ndarray]) -> dict[str, Any] | None:
        """The feeds copied to this session's GPU (ORT values), for :meth:`run_on_device`; None on the CPU EP.

        Thread-safe beside :meth:`run`: a pipeline copies the next batch while the current one runs, so the run
        itself does no host-to-device copy."""
        if self.ort is None or not self.active_ep.is_gpu:
            return None
        ort = import_onnxruntime()
        self._check_feeds(feeds)
        try:
            return {name: ort.OrtValue.ortvalue_from_numpy(a, "cuda", self.device_id) for name, a in feeds.items()}
        except ort_exception_types() as exc:
            raise translate_ort_error(exc, Phase.RUN, self.active_ep, ort.__version__) from None

    def run_on_device(self, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """Run on feeds from :meth:`to_device`; every output comes back to host memory, in the model's order."""
        if self.ort is None:
            raise ConfigError("this session is closed", "open a new one with ortgpu.load()")
        ort = import_onnxruntime()
        binding = self.ort.io_binding()
        for name, value in feeds.items():
            binding.bind_ortvalue_input(name, value)
        for name in self.output_names:
            binding.bind_output(name, "cpu")
        start = time.perf_counter()
        try:
            self.ort.run_with_iobinding(binding, self._run_options)
            outputs: list[np.ndarray] = binding.copy_outputs_to_cpu()
        except ort_exception_types() as exc:
            raise translate_ort_error(exc, Phase.RUN, self.active_ep, ort.__version__) from None
        self.last_run_s = time.perf_counter() - start
        return outputs

    def _check_feeds(self, feeds: Mapping[str, Any]) -> None:
        if not isinstance(feeds, Mapping):
            raise InputError(
                f"feeds must be a mapping of input name -> array, got {type(feeds).__name__}",
                "e.g. session.run({'input': batch})",
            )
        expected = set(self.input_names)
        unknown = sorted(set(feeds) - expected)
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(expected), n=1)
            mean = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(
                f"no input named {unknown[0]!r}{mean}; the model's inputs are {', '.join(sorted(expected))}",
                "feed the model's input names",
            )
        missing = sorted(expected - set(feeds))
        if missing:
            raise InputError(f"missing input(s): {', '.join(missing)}", "feed every input of the model")

    def warm_up(self, spec: InputSpec, runs: int = 2) -> None:
        """Run ``runs`` times on inputs made from ``spec`` (first runs pay for kernel choice and allocation)."""

        inputs = make_inputs(self.model, spec)
        times = []
        for _ in range(max(runs, 0)):
            self.run(inputs.feeds)
            times.append(self.last_run_s or 0.0)
        self.warmup_s = tuple(times)
        self.warmup_shapes = dict(inputs.shapes)

    def end_profiling(self) -> Path:
        """Stop ORT profiling (the session was opened with ``profile_dir``) and return the JSON file it wrote."""
        return Path(self.ort.end_profiling())

    # -- lifetime ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the session (its device memory goes back to ORT's arena owner when the object is freed)."""
        self.ort = None

    def __enter__(self) -> VerifiedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        fallback = ", fallback used" if self.fallback_used else ""
        return (
            f"VerifiedSession({self.model.path.name!r}, requested={self.requested_ep.value}, "
            f"active={self.active_ep.value}{fallback})"
        )


def _available_providers() -> list[str]:
    ort = import_onnxruntime()

    return ort.get_available_providers()


def _create(
    model_path: Path,
    ep: ExecutionProvider,
    config: Config,
    names: list[str],
    options: list[dict[str, str]],
    collect_placement: bool,
    profile_dir: Path | None = None,
    optimized_model_path: Path | None = None,
) -> tuple[Any, float, str, str]:
    """Build the InferenceSession with ORT's log captured; (session, seconds, log text, logid)."""
    ort = import_onnxruntime()

    logid = f"ortgpu-{uuid.uuid4().hex[:12]}"
    severity = VERBOSE if collect_placement else config.session_int("log_severity_level")
    session_options = build_session_options(config, log_severity=severity, logid=logid)
    if profile_dir is not None:
        session_options.enable_profiling = True
        session_options.profile_file_prefix = str(Path(profile_dir) / "ortgpu-profile")
    if optimized_model_path is not None:
        # The graph as ORT will run it; weights go to a side file so a large model's graph stays small.
        session_options.optimized_model_filepath = str(optimized_model_path)
        session_options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", Path(optimized_model_path).name + ".data"
        )
    errors = ort_exception_types()
    with capture_native_stderr() as log, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if collect_placement:
            # ORT says why a node left the device EP ("Force fallback to CPU ...") through its process-wide
            # default logger at INFO; raised for the build only, then back to ORT's default (warning).
            ort.set_default_logger_severity(1)
        failure: BaseException | None
        start = time.perf_counter()
        try:
            # enable_fallback=0: ORT's Python wrapper would otherwise retry on CPU and print to stdout.
            session = ort.InferenceSession(
                str(model_path), session_options, providers=names, provider_options=options, enable_fallback=0
            )
        except errors as exc:
            failure = exc
        else:
            failure = None
        finally:
            elapsed = time.perf_counter() - start
            if collect_placement:
                ort.set_default_logger_severity(2)
    text = log.text + "".join(f"[W:python] {w.message}\n" for w in caught)
    if failure is not None:
        error = translate_ort_error(failure, Phase.CREATE, ep, ort.__version__)
        if isinstance(error, ProviderUnavailableError):
            cause = cause_from_log(text)
            if cause:
                error = ProviderUnavailableError(f"{error.message} ({cause})", error.hint)
        raise error from None
    return session, elapsed, text, logid


def open_session(
    model_path: str | Path,
    ep: ExecutionProvider | str | None = None,
    config: Config | None = None,
    device_id: int | None = None,
    provider_options: Mapping[str, Any] | None = None,
    collect_placement: bool = False,
    *,
    model_info: ModelInfo | None = None,
    profile_dir: Path | None = None,
    optimized_model_path: Path | None = None,
) -> VerifiedSession:
    """Build a session on ``ep`` (default: :func:`best_available_ep`) and prove ``ep`` is the active provider.

    ``provider_options`` are merged over ``config.ep_options[ep]``; ``device_id`` wins over both. When ORT
    fell back (its provider library failed to load: ORT logs it and carries on), this raises
    ProviderUnavailableError (exit 3) with the cause, unless ``config.fallback`` is CPU: then the session runs
    on CPU with ``fallback_used`` set. ``collect_placement`` reads the per-node placement from ORT's verbose log.
    ``model_info`` skips a second inspection of a model already inspected; ``profile_dir`` turns ORT profiling
    on, written there (see :meth:`VerifiedSession.end_profiling`); ``optimized_model_path`` makes ORT save the graph
    it optimised (weights in a ``.data`` file beside it).
    """

    _check_session_arguments(model_path, ep, config, device_id, provider_options)
    config = config or Config()
    model = model_info if model_info is not None else inspect_model(model_path)
    ep_reason = None
    if ep is None:
        ep, ep_reason = best_available_ep()
    elif isinstance(ep, str):
        ep = ExecutionProvider.parse(ep)
    names, options = provider_chain(ep, config, provider_options, device_id)
    device = device_of(options[0]) if ep.is_gpu else 0
    cuda_libraries = ensure_preloaded().summary if ep.is_gpu else None
    fallback_reason = None
    if ep.ort_name not in _available_providers():
        missing = missing_from_build_error(ep)
        if config.fallback is not Fallback.CPU:
            raise missing
        fallback_reason = missing.message
        names, options = ["CPUExecutionProvider"], [{}]

    path = config.model_file_for(model.path, model.sha256)  # [model] file: the tuned copy of this model
    session, elapsed, log_text, logid = _create(
        path, ep, config, names, options, collect_placement, profile_dir, optimized_model_path
    )
    active_names = list(session.get_providers())
    if ep.ort_name not in active_names and fallback_reason is None:
        error = inactive_provider_error(ep, active_names, log_text)
        if config.fallback is not Fallback.CPU:
            raise error
        fallback_reason = error.message
    active = ExecutionProvider.from_ort_name(active_names[0]) or ExecutionProvider.CPU

    placement, placement_note = None, None
    if collect_placement:
        placement = parse_verbose_log(log_text, active.ort_name if fallback_reason else ep.ort_name, logid)
        if placement is None:
            placement_note = "onnxruntime logged no node placement (a minimal build?); placement comes from profiling"
    return VerifiedSession(
        ort=session,
        model=model,
        requested_ep=ep,
        active_ep=active,
        providers=active_names,
        provider_options=options[0] if fallback_reason is None else {},
        device_id=device,
        creation_s=elapsed,
        config=config,
        ep_reason=ep_reason,
        fallback_used=fallback_reason is not None,
        fallback_reason=fallback_reason,
        placement=placement,
        placement_note=placement_note,
        build_log=log_text,
        cuda_libraries=cuda_libraries,
    )


def _check_session_arguments(
    model_path: object, ep: object, config: object, device_id: object, provider_options: object
) -> None:
    """Argument types of :func:`open_session` and :func:`load`, said as ortgpu errors (exit 2), not TypeError."""

    if not isinstance(model_path, (str, os.PathLike)) or isinstance(model_path, bytes):
        raise ModelError(
            f"the model must be a path (str or pathlib.Path), got {type(model_path).__name__}",
            "e.g. ortgpu.load('model.onnx')",
        )
    if ep is not None and not isinstance(ep, (str, ExecutionProvider)):
        raise ConfigError(
            f"ep must be a name such as 'cuda' or an ExecutionProvider, got {type(ep).__name__}", "e.g. ep='cuda'"
        )
    if config is not None and not isinstance(config, Config):
        raise ConfigError(f"config must be an ortgpu Config, got {type(config).__name__}", "use load_config(path)")
    whole = isinstance(device_id, int) and not isinstance(device_id, bool) and 0 <= device_id <= INT_CEILING
    if device_id is not None and not whole:
        raise ConfigError(f"device_id={device_id!r} is not a GPU number (0, 1, ...)", "e.g. device_id=0")
    if provider_options is not None:
        if not isinstance(provider_options, Mapping):
            raise ConfigError(
                f"provider_options must be a mapping of option -> value, got {type(provider_options).__name__}",
                "e.g. provider_options={'cudnn_conv_algo_search': 'HEURISTIC'}",
            )
        for key, value in provider_options.items():
            if not isinstance(key, str) or not isinstance(value, (str, int, float, bool)):
                raise ConfigError(
                    f"provider option {key!r}={value!r}: names are text and values text, numbers or booleans",
                    "e.g. provider_options={'device_id': 0}",
                )


# The keyword overrides ortgpu.load() takes, with what each does (also used for the did-you-mean).
LOAD_OVERRIDES: dict[str, str] = {
    "ep": "execution provider: 'cuda', 'tensorrt', 'cpu' or an ExecutionProvider (default: the best available)",
    "device_id": "GPU to run on (wins over the config's device_id)",
    "provider_options": "provider options merged over the config's [ep.<name>] (validated the same way)",
    "fallback": "'none' or 'cpu' (wins over the config's fallback)",
    "inputs": "an InputSpec for the warm-up runs (default: the config's [inputs])",
    "warmup_runs": "how many warm-up runs (default 2; 0 skips the warm-up)",
    "collect_placement": "read the per-node placement at build time (default True)",
}


def load(model: str | Path, config: Config | str | Path | None = None, **overrides: Any) -> VerifiedSession:
    """Open a verified session on ``model`` and warm it up on the configured input shapes.

    ``config`` is a Config or the path of an ortgpu.toml; ``overrides`` are listed in ``LOAD_OVERRIDES``.
    Raises the same typed errors, with the same messages, as ``ortgpu check`` prints.
    """
    unknown = sorted(set(overrides) - set(LOAD_OVERRIDES))
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(LOAD_OVERRIDES), n=1)
        mean = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"ortgpu.load() got an unknown argument {unknown[0]!r}{mean}",
            "it takes: " + ", ".join(LOAD_OVERRIDES),
        )
    if (config is not None and not isinstance(config, (Config, str, os.PathLike))) or isinstance(config, bytes):
        raise ConfigError(
            f"config must be an ortgpu.toml path or a Config, got {type(config).__name__}",
            "e.g. ortgpu.load('model.onnx', config='ortgpu.toml')",
        )
    runs = overrides.get("warmup_runs", 2)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 0:
        raise ConfigError(f"warmup_runs={runs!r} is not a whole number >= 0", "e.g. warmup_runs=2")
    collect = overrides.get("collect_placement", True)
    if not isinstance(collect, bool):
        raise ConfigError(f"collect_placement={collect!r} is not True or False", "e.g. collect_placement=False")
    inputs = overrides.get("inputs")
    if inputs is not None and not isinstance(inputs, InputSpec):
        raise InputError(
            f"inputs must be an ortgpu InputSpec, got {type(inputs).__name__}",
            "e.g. inputs=InputSpec(shapes={'x': (1, 3, 224, 224)})",
        )
    _check_session_arguments(
        model, overrides.get("ep"), None, overrides.get("device_id"), overrides.get("provider_options")
    )
    if not isinstance(config, Config):
        config = load_config(config)
    if "fallback" in overrides:
        from dataclasses import replace

        value = overrides["fallback"]
        try:
            fallback = value if isinstance(value, Fallback) else Fallback(str(value).lower())
        except ValueError:
            raise ConfigError(f"fallback={value!r} is not 'none' or 'cpu'", "use fallback='cpu' or 'none'") from None
        config = replace(config, fallback=fallback)
    try:
        session = open_session(
            model,
            ep=overrides.get("ep"),
            config=config,
            device_id=overrides.get("device_id"),
            provider_options=overrides.get("provider_options"),
            collect_placement=collect,
        )
        session.warm_up(inputs or config.inputs, runs)
    except MemoryError:
        raise EnvironmentUnfitError(
            f"not enough memory to open and warm up {Path(model).name}", "free memory, or warm up on smaller inputs"
        ) from None
    return session
