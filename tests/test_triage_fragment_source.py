"""A fragment whose first frame the paste lost keeps the source line above its first frame:
what that line calls tells the failure's kind (``ncclCommInitRank``: a communicator's set-up)."""

from __future__ import annotations

import pytest

from ppaux.triage import triage_paths

_CALL = '    self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm), world_size))'
_FRAGMENT = [
    '  File "/usr/lib/python3/vllm/distributed/pynccl_wrapper.py", line 257, in NCCL_CHECK',
    '    raise RuntimeError(f"NCCL error: {error_str}")',
    "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
]


def _kind(tmp_path, lines):
    """The root's kind; for a log whose only failure is a communication failure in flight,
    triage's 'no root' (PP809: the cause is on the network or another node)."""
    path = tmp_path / "paste.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root,) = [f for f in triage_paths([str(path)]).findings if f.code in ("PP802", "PP809")]
    return root.extra["kind"] if root.code == "PP802" else root.extra["no_root"]


@pytest.mark.parametrize("before", [[], ["[2026-12-01 10:00:00 PP1 TP0] Load weight end."]])
def test_the_lost_frame_s_source_line_says_set_up(tmp_path, before):
    assert _kind(tmp_path, [*before, _CALL, *_FRAGMENT]) == "communication-init"


def test_inside_a_pretty_printed_json_export_too(tmp_path):
    import json

    records = [{"line": line, "tsNs": str(n)} for n, line in enumerate([_CALL, *_FRAGMENT])]
    text = json.dumps(records, indent=2)
    assert _kind(tmp_path, text.split("\n")) == "communication-init"


@pytest.mark.parametrize(
    "between",
    [
        "[2026-12-01 10:00:00 PP1 TP0] Decode batch. #running-req: 1",  # another line between
        "",
    ],
)
def test_a_line_that_is_not_just_above_the_first_frame_says_nothing(tmp_path, between):
    # no set-up said: NCCL's 'unhandled cuda error' is then a CUDA call of NCCL's that failed
    # on this rank's GPU
    lines = [_CALL, between, *_FRAGMENT] if between else [_CALL.strip(), *_FRAGMENT]
    assert _kind(tmp_path, lines) == "shape-kernel"
