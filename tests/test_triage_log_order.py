"""Logs that no time orders: where neither a log's root nor another log's failure carries a
time, nothing says which came first. The other log's own root (its first failure whose
exception it shows, not a communication failure in flight) stays a root, and what is not a
root there is never said to have failed "after the root" (megatron-343's port conflict given
with modelopt-220's illegal memory access, two unrelated reports). Expectations by hand."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

PORT = (
    'File "/srv/megatron/initialize.py", line 190, in _initialize_distributed\n'
    "torch.distributed.init_process_group(\n"
    "RuntimeError: Address already in use\n"
)
IMA = (
    '  File "/srv/trt/model_runner.py", line 12, in generate\n'
    "    outputs = self.session.run()\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)
CUT = 'Traceback (most recent call last):\n  File "/srv/trt/run.py", line 3, in main\n'


def _findings(tmp_path: Path, *texts: str) -> list[tuple[str, str, str]]:
    paths = []
    for number, text in enumerate(texts):
        path = tmp_path / f"log{number}.log"
        path.write_text(text)
        paths.append(str(path))
    report = triage_paths(paths)
    return [
        (f.code, Path(f.location.file).name if f.location else "", f.message)
        for f in report.findings
        if f.code in ("PP802", "PP803")
    ]


def test_each_log_s_own_root_stays_a_root_where_no_time_orders_them(tmp_path: Path) -> None:
    for texts in ((PORT, IMA), (IMA, PORT)):
        found = _findings(tmp_path, *texts)
        assert sorted((code, name) for code, name, _ in found) == [
            ("PP802", "log0.log"),
            ("PP802", "log1.log"),
        ]


def test_a_failure_in_another_untimed_log_is_never_said_to_follow_the_root(
    tmp_path: Path,
) -> None:
    found = _findings(tmp_path, IMA, CUT)
    assert [(code, name) for code, name, _ in found] == [
        ("PP802", "log0.log"),
        ("PP803", "log1.log"),
    ]
    message = found[1][2]
    assert "after the root" not in message
    assert "in another log, which no time orders with the root's" in message


def test_in_one_log_its_place_still_orders_what_followed(tmp_path: Path) -> None:
    found = _findings(tmp_path, IMA + CUT)
    assert [code for code, _, _ in found] == ["PP802", "PP803"]
    assert "after the root" in found[1][2]
