"""Benchmark ppaux capture: the cost of the wrappers on healthy calls, and of writing a capture.

Targets (docs/benchmarks.md, "capture"):

* with capture installed and nothing failing, the wrapped ``pop_...`` and ``add_...`` cost at
  most 1.05x the bare functions (median over many calls on a realistic dict);
* a failing call with a 64 MiB dict writes its capture in at most 1 s.

The transport is sglang's own ``sampling_observer_pp.py`` when ``--sglang`` names a wheel or a
directory (or sglang is installed), otherwise ppaux's reference transport, which runs the same
checks. Both forms are measured: :func:`ppaux.capture.install` (one wrapper), and, when the
sglang source has the plugin framework, the AROUND hooks applied by sglang's ``HookRegistry``
(with, for comparison, sglang's wrapper around an empty hook: the framework's own price).
``bare_again`` times the bare function a second time; its ratio shows the noise floor.

    python benchmarks/bench_capture.py [--sglang WHEEL_OR_DIR] [--calls 2000] [--rounds 41]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import tempfile
import time
import types
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ppaux.capture import install, uninstall
from ppaux.capture.hop_hooks import hook_for, wrap
from ppaux.sglang import ADD, MSG_TYPE_KEY, OUTPUT_PREFIX, POP

# The logprob keys of a 0.5.22+ output message (scheduler_pp_mixin / managers/utils.py): most are
# Python lists, which is what makes the dict realistic for pop's key scan.
_LOGPROB_KEYS = (
    "input_token_logprobs_val",
    "input_token_logprobs_idx",
    "output_token_logprobs_val",
    "output_token_logprobs_idx",
    "input_top_logprobs_val",
    "input_top_logprobs_idx",
    "output_top_logprobs_val",
    "output_top_logprobs_idx",
    "input_token_ids_logprobs_val",
    "input_token_ids_logprobs_idx",
    "output_token_ids_logprobs_val",
    "output_token_ids_logprobs_idx",
    "sampling_mask_token_ids",
    "sampling_mask_logprobs",
    "sampling_mask_num_accept_tokens",
    "sampling_mask_support_logprobs",
    "extend_input_len_per_req",
    "extend_logprob_start_len_per_req",
)
_BATCH = 32


class _Output:
    """An auxiliary output with two tensors, as a sampling observer would produce."""

    def __init__(self, tensors: dict) -> None:
        self._tensors = tensors

    def to_pp_tensors(self) -> dict:
        return self._tensors


class _Observer:
    def from_pp_tensors(self, tensors: dict) -> dict:
        return dict(tensors)


def _message() -> dict:
    message: dict[str, Any] = {"next_token_ids": torch.arange(_BATCH)}
    for key in _LOGPROB_KEYS:
        message[key] = [0.5] * _BATCH
    message[MSG_TYPE_KEY] = "output"
    return message


_AUX = {"scores": torch.rand(_BATCH), "token_ids": torch.arange(_BATCH)}


def _transport(source: str | None) -> types.ModuleType:
    from ppaux.sglang_source import loader as sglang_module

    try:
        return sglang_module.load_transport_module(source)
    except sglang_module.SglangNotFound:
        if source is not None:
            raise
        import ppaux.replay.transport

        return ppaux.replay.transport


def _hook_registry(source: str | None) -> types.ModuleType | None:
    """sglang's hook_registry.py (stdlib-only) from the wheel or directory, if it has one."""
    name = "sglang/srt/plugins/hook_registry.py"
    code: bytes | None = None
    if source is not None and Path(source).is_file():
        with zipfile.ZipFile(source) as wheel:
            if name in wheel.namelist():
                code = wheel.read(name)
    elif source is not None:
        for base in (Path(source), Path(source) / "python"):
            if (base / name).is_file():
                code = (base / name).read_bytes()
    if code is None:
        return None
    module = types.ModuleType("sglang.srt.plugins.hook_registry")
    exec(compile(code, name, "exec", dont_inherit=True), module.__dict__)
    return module


def _per_call(fn: Callable, make_args: Callable[[], tuple], calls: int) -> float:
    args = [make_args() for _ in range(calls)]
    # A collection inside one timed loop and not another is the largest source of noise.
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for a in args:
            fn(*a)
        return (time.perf_counter() - start) / calls
    finally:
        gc.enable()


def _compare(
    variants: dict[str, Callable], make_args: Callable[[], tuple], calls: int, rounds: int
) -> dict[str, dict[str, float]]:
    """Median seconds per call of each variant, and the median of its per-round ratio to
    'bare': each round times every variant back to back, so a burst of load on the machine
    slows a whole round and cancels out of the ratio."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():  # warm-up
        _per_call(fn, make_args, calls)
    names = list(variants)
    for r in range(rounds):
        # rotate the order each round so that no variant always runs first or last
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(_per_call(variants[name], make_args, calls))
    bare = samples["bare"]
    return {
        name: {
            "median_us": round(statistics.median(values) * 1e6, 3),
            "ratio": round(statistics.median(v / b for v, b in zip(values, bare, strict=True)), 4),
        }
        for name, values in samples.items()
    }


def _call_through(original: Callable, *args: Any, **kwargs: Any) -> Any:
    return original(*args, **kwargs)


def _healthy(
    module: types.ModuleType,
    registry: types.ModuleType | None,
    calls: int,
    rounds: int,
    directory: str,
) -> dict:
    bare_add = module.add_auxiliary_output_to_pp_tensors
    bare_pop = module.pop_auxiliary_output_from_pp_tensors
    observer = _Observer()
    output = _Output(_AUX)

    def pop_args() -> tuple:
        message = _message()
        for name, tensor in _AUX.items():
            message[OUTPUT_PREFIX + name] = tensor
        return (message, observer)

    def add_args() -> tuple:
        return (_message(), output)

    install(directory)
    try:
        # What install() puts in place, and what sglang's HookRegistry builds for the plugin.
        add_hook = hook_for(ADD, bare_add)
        pop_hook = hook_for(POP, bare_pop)
        installed_add = wrap(bare_add, add_hook)
        installed_pop = wrap(bare_pop, pop_hook)
        # 'bare_again' times the bare function a second time: its ratio is the noise floor.
        add_variants = {"bare": bare_add, "bare_again": bare_add, "install": installed_add}
        pop_variants = {"bare": bare_pop, "bare_again": bare_pop, "install": installed_pop}
        if registry is not None:
            around = registry.HookType.AROUND
            add_variants["plugin"] = registry._wrap_fn(bare_add, add_hook, around)
            pop_variants["plugin"] = registry._wrap_fn(bare_pop, pop_hook, around)
            # sglang's wrapper around a hook that only calls through: the framework's own
            # price, which every AROUND plugin pays
            add_variants["sglang_empty_hook"] = registry._wrap_fn(bare_add, _call_through, around)
            pop_variants["sglang_empty_hook"] = registry._wrap_fn(bare_pop, _call_through, around)
        add = _compare(add_variants, add_args, calls, rounds)
        pop = _compare(pop_variants, pop_args, calls, rounds)
    finally:
        uninstall()
    return {"add": add, "pop": pop}


def _overhead(registry: types.ModuleType | None, directory: str, calls: int = 200_000) -> dict:
    """Nanoseconds each wrapper adds to a call, around functions that do nothing.

    The minimum of several timings is the figure least disturbed by other work on the machine;
    added to the bare medians above, it bounds the ratio from below the noise."""
    import timeit

    def add_auxiliary_output_to_pp_tensors(tensors: Any, output: Any) -> None:
        return None

    def pop_auxiliary_output_from_pp_tensors(tensors: Any, observer: Any) -> None:
        return None

    result = {}
    install(directory)
    try:
        for name, bare, hook_name in (
            ("add", add_auxiliary_output_to_pp_tensors, ADD),
            ("pop", pop_auxiliary_output_from_pp_tensors, POP),
        ):
            hook = hook_for(hook_name, bare)
            variants = {"bare": bare, "install": wrap(bare, hook)}
            if registry is not None:
                around = registry.HookType.AROUND
                variants["plugin"] = registry._wrap_fn(bare, hook, around)
                variants["sglang_empty_hook"] = registry._wrap_fn(bare, _call_through, around)
            best = {
                k: min(timeit.repeat(lambda f=f: f({}, None), number=calls, repeat=7)) / calls
                for k, f in variants.items()
            }
            result[name] = {
                f"{k}_added_ns": round((v - best["bare"]) * 1e9, 1)
                for k, v in best.items()
                if k != "bare"
            }
    finally:
        uninstall()
    return result


def _failing(module: types.ModuleType, repeats: int) -> dict:
    """Seconds for one failing pop on a 64 MiB dict, capture written, in a fresh directory."""
    big = torch.rand(16 * 1024 * 1024)  # 64 MiB of float32
    seconds = []
    sizes = []
    bare_pop = module.pop_auxiliary_output_from_pp_tensors
    pop = wrap(bare_pop, hook_for(POP, bare_pop))
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="ppaux-bench-") as directory:
            install(directory)
            message = _message()
            message["hidden_logits"] = big
            message[OUTPUT_PREFIX + "scores"] = [0.1, 0.7]  # the non-tensor that makes pop fail
            start = time.perf_counter()
            with contextlib.suppress(RuntimeError):
                pop(message, _Observer())
            seconds.append(time.perf_counter() - start)
            written = sorted(Path(directory).glob("capture-*.pt"))
            if len(written) != 1:
                raise SystemExit(f"expected one capture, found {len(written)}")
            sizes.append(written[0].stat().st_size)
            uninstall()
    return {
        "median_s": round(statistics.median(seconds), 4),
        "max_s": round(max(seconds), 4),
        "file_bytes": sizes[0],
        "repeats": repeats,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON document."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sglang",
        help="sglang wheel or directory (default: installed, or ppaux's reference transport)",
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed round")
    parser.add_argument("--rounds", type=int, default=41, help="timed rounds per variant")
    parser.add_argument("--repeats", type=int, default=5, help="failing 64 MiB captures")
    args = parser.parse_args(argv)
    module = _transport(args.sglang)
    registry = _hook_registry(args.sglang)
    with tempfile.TemporaryDirectory(prefix="ppaux-bench-") as directory:
        healthy = _healthy(module, registry, args.calls, args.rounds, directory)
        overhead = _overhead(registry, directory)
    failing = _failing(module, args.repeats)
    print(
        json.dumps(
            {
                "transport": getattr(module, "__file__", module.__name__),
                "torch": str(torch.__version__),
                "python": sys.version.split()[0],
                "calls": args.calls,
                "rounds": args.rounds,
                "healthy": healthy,
                "wrapper_overhead": overhead,
                "failing_64MiB": failing,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
