"""Benchmark ppaux.guard.check_pp_tensors against the bare one-line assert, in the same run.

The message is a realistic output message: ``next_token_ids``, the 18 logprob keys of sglang
0.5.22+ (read from the bundled ``fixtures/dumps/clean_output.pt``; most are Python lists or None,
as sglang sends them), ``__msg_type__`` and ``--aux`` auxiliary tensors. Both checks pass on it
(the healthy path, which is what production code pays on every batch). Timed per call, median
over rounds; ``bare_again`` times the one-liner a second time and shows the noise floor.

    python benchmarks/bench_guard.py [--aux 3] [--batch 32] [--calls 20000] [--rounds 31]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ppaux.dump.dumpfile import read_dump
from ppaux.guard import check_pp_tensors
from ppaux.sglang.names import MSG_TYPE_KEY, OUTPUT_PREFIX

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "dumps" / "clean_output.pt"


def message(batch: int, aux: int) -> dict[str, Any]:
    """next_token_ids, the logprob keys of clean_output.pt as sglang fills them, aux tensors."""
    keys = [
        k
        for k in read_dump(FIXTURE).root
        if k not in ("next_token_ids", MSG_TYPE_KEY) and not k.startswith(OUTPUT_PREFIX)
    ]
    out: dict[str, Any] = {"next_token_ids": torch.arange(batch)}
    for index, key in enumerate(keys):
        # Lists of floats, lists of lists, and None: the mix sglang sends.
        out[key] = (
            [0.5] * batch if index % 3 == 0 else [[0.25, 0.5]] * batch if index % 3 == 1 else None
        )
    for index in range(aux):
        out[f"{OUTPUT_PREFIX}aux{index}"] = torch.rand(batch)
    out[MSG_TYPE_KEY] = "output"
    return out


def bare(tensors: dict[str, Any]) -> None:
    """The one-liner the error page suggests."""
    assert all(torch.is_tensor(v) for k, v in tensors.items() if k.startswith(OUTPUT_PREFIX))


def _per_call(
    check: Callable[[dict[str, Any]], None], tensors: dict[str, Any], calls: int
) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        check(tensors)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aux", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    tensors = message(args.batch, args.aux)
    checks = {"bare": bare, "guard": check_pp_tensors, "bare_again": bare}
    times: dict[str, list[float]] = {name: [] for name in checks}
    for _ in range(args.rounds):
        for name, check in checks.items():  # interleaved: drift hits all three alike
            times[name].append(_per_call(check, tensors, args.calls))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(
        json.dumps(
            {
                "keys": len(tensors),
                "aux_tensors": args.aux,
                "batch": args.batch,
                "calls": args.calls,
                "rounds": args.rounds,
                "torch": torch.__version__,
                "us_per_call": {name: round(value * 1e6, 3) for name, value in median.items()},
                "ratio_guard_to_bare": round(median["guard"] / median["bare"], 2),
                "ratio_bare_again_to_bare": round(median["bare_again"] / median["bare"], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
