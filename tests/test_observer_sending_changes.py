"""``to_pp_tensors`` that changes the output in place while sending it (PP717).

sglang's last stage sends the output and goes on using it (its own ``copy_to_host`` and
``consume``), so a field that ``to_pp_tensors`` changes is changed for the last stage even where
it is not sent, and rank 0's rebuilt output (from what was sent) matches the output as
``after_sample`` returned it: nothing on the wire differs. fixtures/observers/send_changes.py
counts its sends in a tensor of the output that it does not send; the check runs in the child
(the file's target) and in this process (the object in hand), and both name ``to_pp_tensors``,
the field, and the line that changes it."""

from __future__ import annotations

import pytest
from helpers import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.observer import ObserverOptions, check_loaded, check_observer, load_observer
from ppaux.observer.findings import sending_changes

pytestmark = pytest.mark.torch

FIXTURE = REPO / "fixtures" / "observers" / "send_changes.py"
TARGET = f"{FIXTURE}:CountingObserver"
#: The line of the fixture that changes the count (read here, never from the check).
LINE = next(
    n for n, text in enumerate(FIXTURE.read_text().splitlines(), 1) if "self.sends.add_(1)" in text
)
OPTIONS = ObserverOptions(batch_sizes=(2,), steps=2)


def _pp717(report):
    found = [f for f in report.findings if f.code == "PP717"]
    assert found, [(f.code, f.message) for f in report.findings]
    return found


@pytest.mark.parametrize("where", ["child", "in hand"])
def test_a_change_to_a_field_that_is_not_sent_is_named(where):
    if where == "child":
        report = check_observer(TARGET, OPTIONS)
    else:
        report = check_loaded(load_observer(TARGET), OPTIONS)
    found = _pp717(report)
    assert len(found) == 1  # one field, reported once however many steps
    item = found[0]
    assert item.key == ".sends"
    assert item.message.startswith(
        "to_pp_tensors changed .sends of the output in place while sending it (bits): "
        "was float32 (2,) cpu [0, 0], is now float32 (2,) cpu [1, 1] (batch size 2, step 0)"
    ), item.message
    assert item.extra["what"] == "bits"
    assert item.location is not None
    assert (item.location.file.endswith("send_changes.py"), item.location.line) == (True, LINE)
    # Nothing else: the wire, rank 0's output and the requests agree.
    assert sorted({f.code for f in report.findings}) == ["PP717"]
    rows = report.tables[0].rows
    assert rows[0][3] == "changed by to_pp_tensors (PP717)"


def test_the_fixed_observer_that_does_not_change_its_output_is_clean():
    report = check_loaded(
        load_observer(f"{REPO}/fixtures/observers/entropy_fixed.py:EntropyObserver"), OPTIONS
    )
    assert report.findings == ()


_LEAF = st.builds(
    lambda kind, key: {"kind": "value", "type": kind, "text": key, "key": key},
    st.sampled_from(["int", "str"]),
    st.sampled_from(["1", "2", "x"]),
)
_PATHS = st.sampled_from([".a", ".b", ".c['k']", ".d[0]"])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(_PATHS, _LEAF, max_size=4),
    st.dictionaries(_PATHS, _LEAF, max_size=4),
    st.booleans(),
)
def test_every_changed_or_removed_field_and_no_other_is_a_finding(output, sending, sent):
    step = {"output": output, **({"sending": sending} if sent else {})}
    found = sending_changes("t:O", step, "batch size 1, step 0")
    # Hand-written: a field is changed where it is gone, or its type or key is not the same;
    # a field the output gained is not a change; no 'sending' record is no change.
    expected = (
        {
            path
            for path, leaf in output.items()
            if path not in sending
            or (sending[path]["type"], sending[path]["key"]) != (leaf["type"], leaf["key"])
        }
        if sent
        else set()
    )
    assert {f.key for f in found} == expected
    assert all(f.code == "PP717" and f.message.startswith("to_pp_tensors changed ") for f in found)
