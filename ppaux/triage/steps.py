"""What to run next, as commands, for the incidents triage found.

First, where the root is the sampling observer's to check (one of its methods raised, or the
last stage's add refused what it returned): ``ppaux check-observer`` on it. For an
auxiliary-output root: the capture settings to turn on (ppaux installed in sglang's
environment, ``PPAUX_CAPTURE_DIR`` on every stage, ``PPAUX_CAPTURE_STRICT=1`` on the last stage,
where a non-tensor value enters the output message), ``ppaux fingerprint``/``check-skew``
across the stages, then ``ppaux capture list``, ``inspect`` and ``replay`` on what the capture
writes. For any other PP failure only the stage comparison: nothing claims a capture would
explain it.
"""

from __future__ import annotations

import re

from ppaux.sglang import MessageMatch

__all__ = ["DEFAULT_CAPTURE_DIR", "MAX_LISTED_STAGES", "next_steps"]

#: Pipeline stages up to which the fingerprint step is one command per stage (``--pp-rank 0``,
#: ``1``, ...); past it, or when the logs do not say how many, one command for rank ``N``.
MAX_LISTED_STAGES = 16

#: Where the suggested capture writes, unless the logs show the capture already on.
DEFAULT_CAPTURE_DIR = "/tmp/ppaux-captures"

_PP = re.compile(r"\bPP(\d+)\b")


def _last_stage(ranks: list[str]) -> int | None:
    found = [int(m.group(1)) for text in ranks for m in _PP.finditer(text)]
    return max(found) if found else None


def next_steps(
    matches: list[MessageMatch | None],
    ranks_seen: list[str],
    captures: list[tuple[str, bool]],
    observers: list[str] | None = None,
) -> list[str]:
    """Commands for incidents whose roots matched ``matches`` (None: not an auxiliary-output
    error); ``ranks_seen``: the rank prefixes in the logs (the failures' and every ``PPn`` sglang's
    prefixes show); ``captures``: capture directories the logs show in use; ``observers``:
    targets for ``ppaux check-observer`` (``FILE:Observer`` where a frame names the observer's
    file, else ``MODULE:Observer``), for roots that are the sampling observer's to check."""
    if not matches:
        return []
    last = _last_stage(ranks_seen)
    stages = (last + 1) if last is not None and last > 0 else None
    steps: list[str] = []
    for target in observers or []:
        steps += [
            "# check the sampling observer as sglang's PP transport runs it, without a restart "
            "(its module or file, and its class)",
            f"ppaux check-observer {target}",
        ]
    aux = [m for m in matches if m is not None]
    directory = captures[0][0] if captures else DEFAULT_CAPTURE_DIR
    if aux:
        if captures:
            steps.append(
                f"# the logs show ppaux's capture writing to {directory}: read what it wrote"
            )
        else:
            last_name = f"PP{last}" if last is not None and last > 0 else "the last stage"
            steps += [
                "# capture the failing message: install ppaux in sglang's environment on every "
                "stage, then restart sglang with",
                f"export PPAUX_CAPTURE_DIR={directory}",
                f"export PPAUX_CAPTURE_STRICT=1  # on {last_name} only: stop where a non-tensor "
                "value enters the output message",
            ]
    steps.append("# compare the stages: on each stage's host")
    if stages is not None and stages <= MAX_LISTED_STAGES:
        # One command per stage, each runnable as it stands on that stage's host.
        steps += [
            f"ppaux fingerprint --pp-rank {rank} --pp-size {stages} -o stage-{rank}.json"
            f"  # on PP{rank}'s host"
            for rank in range(stages)
        ]
    else:
        pp_size = f" --pp-size {stages}" if stages else ""
        steps.append(f"ppaux fingerprint --pp-rank N{pp_size} -o stage-N.json")
    steps.append("ppaux check-skew stage-*.json  # with every stage's file in one place")
    if aux:
        steps += [
            "# then read what the capture wrote",
            f"ppaux capture list --dir {directory}",
            f"ppaux inspect {directory}",
            f"ppaux replay {directory}",
        ]
    return steps
