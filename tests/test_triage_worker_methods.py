"""A worker's line naming the method it ran (``Error executing method init_device``) gives
that method to the traceback of the same worker below it, other lines between them or not,
within a few dozen lines; never to another worker's traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppaux.triage import triage_paths

_METHOD = (
    "ERROR 12-03 14:56:06 worker_base.py:465] Error executing method init_device. This might "
    "cause deadlock in distributed execution."
)
_TRACEBACK = [
    "ERROR 12-03 14:56:07 worker_base.py:467] Traceback (most recent call last):",
    'ERROR 12-03 14:56:07 worker_base.py:467]   File "/x/vllm/distributed/device_communicators/'
    'pynccl_wrapper.py", line 291, in NCCL_CHECK',
    'ERROR 12-03 14:56:07 worker_base.py:467]     raise RuntimeError(f"NCCL error: {error_str}")',
    "ERROR 12-03 14:56:07 worker_base.py:467] RuntimeError: NCCL error: unhandled system error",
]


def _of(pid: int, line: str) -> str:
    return f"(RayWorkerWrapper pid={pid}, ip=10.0.0.1) {line}"


def _filler(pid: int, count: int) -> list[str]:
    return [_of(pid, f"INFO 12-03 14:56:06 model_runner.py:1 loading {n}") for n in range(count)]


def _roots(tmp_path: Path, lines: list[str]) -> list[tuple[str, str | None]]:
    path = tmp_path / "ray.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    findings = triage_paths([str(path)]).findings
    return [
        (f.code, (f.extra or {}).get("kind"))
        for f in findings
        if f.code in ("PP801", "PP802", "PP809")
    ]


@pytest.mark.parametrize("between", [1, 3, 10, 30, 38])
def test_the_workers_own_lines_between_keep_its_set_up(tmp_path, between):
    lines = [_of(335, _METHOD), *_filler(335, between), *(_of(335, t) for t in _TRACEBACK)]
    assert _roots(tmp_path, lines) == [("PP802", "communication-init")]


def test_another_workers_line_between_keeps_its_set_up(tmp_path):
    lines = [_of(335, _METHOD), *_filler(777, 1), *(_of(335, t) for t in _TRACEBACK)]
    assert _roots(tmp_path, lines) == [("PP802", "communication-init")]


def test_a_method_line_far_above_says_nothing(tmp_path):
    # 42 lines between: the method line is 43 lines above the traceback
    lines = [_of(335, _METHOD), *_filler(335, 42), *(_of(335, t) for t in _TRACEBACK)]
    assert _roots(tmp_path, lines) == [("PP809", None)]


def test_another_workers_method_line_says_nothing(tmp_path):
    lines = [_of(999, _METHOD), *_filler(335, 2), *(_of(335, t) for t in _TRACEBACK)]
    assert _roots(tmp_path, lines) == [("PP809", None)]
