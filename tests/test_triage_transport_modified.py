"""A message that sglang's add and pop never raise, raised by a raise statement inside them
(a typo'd copy of one of the nine, in sglang 0.5.19 - 0.5.23's transport file): PP802, and the
root says that host's transport was modified (PP304)."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

SITE = "/usr/local/lib/python3.11/site-packages/sglang/srt"
LOG = """\
[2026-12-03 14:56:07 PP0] Scheduler hit an exception: Traceback (most recent call last):
  File "{site}/managers/scheduler_pp_mixin.py", line 991, in _pp_prep_batch_result
    auxiliary_output = pop_auxiliary_output_from_pp_tensors(
  File "{file}", line 77, in {function}
    {code}
RuntimeError: recieved a non-tensor auxilary PP output
"""


def _root(tmp_path: Path, **fields: str) -> dict:
    values = {
        "site": SITE,
        "file": f"{SITE}/sampling/sampling_observer_pp.py",
        "function": "pop_auxiliary_output_from_pp_tensors",
        "code": 'raise RuntimeError("recieved a non-tensor auxilary PP output")',
        **fields,
    }
    log = tmp_path / "sglang.log"
    log.write_text(LOG.format(**values), encoding="utf-8")
    roots = [item for item in triage_paths([str(log)]).findings if item.code in ("PP801", "PP802")]
    assert len(roots) == 1
    return {"code": roots[0].code, "message": roots[0].message, "extra": roots[0].extra}


def test_a_message_pop_never_raises_raised_by_its_raise_points_at_a_modified_transport(
    tmp_path: Path,
) -> None:
    root = _root(tmp_path)
    assert root["code"] == "PP802"
    assert root["extra"]["transport_modified"] == "pop_auxiliary_output_from_pp_tensors"
    assert "that host's transport was modified (PP304 transport-modified" in root["message"]


def test_elsewhere_or_not_by_a_raise_statement_nothing_is_said_of_the_transport(
    tmp_path: Path,
) -> None:
    others = (
        {"function": "_pp_prep_batch_result"},
        {"file": f"{SITE}/managers/other.py"},
        {"code": "value = tensor.to(device)"},
    )
    for fields in others:
        root = _root(tmp_path, **fields)
        assert root["code"] == "PP802", fields
        assert "transport_modified" not in root["extra"], fields
        assert "transport was modified" not in root["message"], fields
