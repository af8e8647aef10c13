"""One communication failure in flight is said the same whether or not the traceback raised
from it (``The above exception was the direct cause of the following exception:``, then a
traceback cut before its own exception) was pasted: no root in the log, the cause on the
network or another node (PP809, exit 1), as docs/triage.md says of a log whose only failures
are communication failures. A chain whose first exception is of another kind stays a root.
Expectations by hand."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

V = "ERROR 06-16 10:59:13 [core.py:505] "
TIMEOUT = (
    f'{V}  File "python/ray/includes/common.pxi", line 106, in ray._raylet.check_status\n'
    f"{V}ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for object "
    "available to read. ObjectID: 00cc3164\n"
)
RAISED_FROM = (
    f"{V}\n{V}The above exception was the direct cause of the following exception:\n{V}\n"
    f"{V}Traceback (most recent call last):\n"
    f'{V}  File "/srv/vllm/v1/engine/core.py", line 496, in run_engine_core\n'
    f"{V}    engine_core.run_busy_loop()\n"
)


def _roots(tmp_path: Path, text: str) -> list[tuple[str, str | None]]:
    log = tmp_path / "engine.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    return [
        (f.code, (f.extra or {}).get("no_root") or (f.extra or {}).get("kind"))
        for f in report.findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


def test_a_timeout_alone_and_with_its_cut_chain_are_said_alike(tmp_path: Path) -> None:
    alone = _roots(tmp_path, TIMEOUT)
    assert alone == [("PP809", "network-or-other-node")]
    assert _roots(tmp_path, TIMEOUT + RAISED_FROM) == alone


def test_a_cut_chain_of_another_kind_stays_a_root(tmp_path: Path) -> None:
    other = TIMEOUT.replace(
        "ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for object "
        "available to read. ObjectID: 00cc3164",
        "ValueError: bad shape for layer 3",
    )
    assert _roots(tmp_path, other + RAISED_FROM) == [("PP802", "other")]
