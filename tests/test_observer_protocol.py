"""The order and the fields of a check child's records, as its parent takes them: the check's
own order is taken, and whatever a target sends, the records that move the run on (each of
which gives it one more timeout) are at most two a step and four more."""

from __future__ import annotations

import pytest
from helpers import OBSERVER_START as START
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.observer.protocol import Protocol, check_fields

END = {"event": "end", "threads": [], "timers": []}
MADE = {"event": "made", "method": "after_sample", "return": None, "names": {}}
TENSOR = {
    "kind": "tensor",
    "dtype": "float32",
    "shape": [1],
    "strides": [1],
    "device": "cpu",
    "layout": "strided",
    "quantization": None,
    "sha256": "0" * 64,
    "values": "[0.5]",
}
VALUE = {"kind": "value", "type": "float", "text": "0.5", "key": "0.5"}


def step(size: int, index: int) -> dict:
    return {
        "event": "step",
        "batch_size": size,
        "step": index,
        "sent": ["x"],
        "single": None,
        "pp": None,
        "output_type": "Out",
        "output": {".x": TENSOR},
        "rebuilt_type": "Out",
        "rebuilt": {".x": TENSOR},
        "single_reqs": [{".customized_info['x'][0]": VALUE}],
        "pp_reqs": [{".customized_info['x'][0]": VALUE}],
    }


def requests(size: int, index: int) -> dict:
    return {
        "event": "requests",
        "batch_size": size,
        "step": index,
        "single_reqs": [{}],
        "pp_reqs": [{}],
    }


def again(size: int, index: int, last: int) -> dict:
    return {"event": "again", "batch_size": size, "step": index, "by_step": last, "output": {}}


def a_check(sizes: tuple[int, ...], steps: int) -> list[dict]:
    """The records of a check that ran every step, in the order the child sends them."""
    records = [{"event": "ready"}, START]
    for size in sizes:
        for index in range(steps):
            records += [step(size, index), MADE]
        records.append(requests(size, steps - 1))
        records += [again(size, index, steps - 1) for index in range(steps - 1)]
    return [*records, {"event": "locations", "subjects": {}}, END]


@pytest.mark.parametrize(("sizes", "steps"), [((1, 4), 3), ((2, 2), 2), ((8,), 1)])
def test_the_checks_own_order_is_taken(sizes, steps):
    protocol = Protocol(sizes, steps, 1000)
    moved = [protocol.take(record) for record in a_check(sizes, steps)]
    # ready, start, per batch size each step, the requests and each again, locations, end.
    assert moved.count(True) == 2 + len(sizes) * (2 * steps) + 2
    assert protocol.where() == "after the last step"


def test_the_receivers_start_up_is_a_part_of_its_own_before_the_start():
    protocol = Protocol((1,), 1, 1000)
    records = a_check((1,), 1)
    records.insert(1, {"event": "receiver"})
    moved = [protocol.take(record) for record in records]
    assert moved[:3] == [True, True, True]
    assert protocol.where() == "after the last step"


@pytest.mark.parametrize(
    ("records", "said"),
    [
        ([START], "a 'start' record out of the check's order (before the check's start)"),
        (
            [{"event": "ready"}, START, step(1, 0), step(1, 0)],
            "a 'step' record out of the check's order (after the record of batch size 1, step 0)",
        ),
        (
            [{"event": "ready"}, START, step(1, 3)],
            "a 'step' record out of the check's order (before the first step's record)",
        ),
        (
            [{"event": "ready"}, START, step(2, 0)],
            "a 'step' record out of the check's order (before the first step's record)",
        ),
        (
            [{"event": "ready"}, START, step(4, 0), step(1, 0)],
            "a 'step' record out of the check's order (after the record of batch size 4, step 0)",
        ),
        ([{"event": "ready"}, START, END], "an 'end' record out of the check's order"),
        ([{"event": "ready"}, MADE], "a 'made' record out of the check's order"),
        (
            [{"event": "ready"}, {"event": "receiver"}, {"event": "receiver"}],
            "a 'receiver' record out of the check's order",
        ),
        ([{"event": "ready"}, START, {"event": "receiver"}], "a 'receiver' record out of"),
    ],
)
def test_records_out_of_the_checks_order_are_refused(records, said):
    protocol = Protocol((1, 4), 3, 1000)
    with pytest.raises(ValueError, match="out of the check's order") as caught:
        for record in records:
            protocol.take(record)
    assert str(caught.value).startswith(said)


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ({"event": "zz"}, "an event that is not the check's ('zz')"),
        ({**MADE, "extra": 1}, "a field 'extra' that a 'made' record does not have"),
        ({**step(1, 0), "batch_size": True}, "a 'step' record whose 'batch_size' is not"),
        ({**step(1, 0), "step": -1}, "a 'step' record whose 'step' is not"),
        ({**END, "timers": [["SIGALRM", float("nan")]]}, "an 'end' record whose 'timers' is"),
        ({**END, "timers": [["SIGALRM", "1"]]}, "an 'end' record whose 'timers' is"),
        ({"event": "end", "threads": []}, "an 'end' record without its 'timers'"),
        ({**step(1, 0), "output": {".x": 1}}, "a 'step' record whose 'output' is not"),
        # A leaf deep in a description, of each kind, is checked against its own fields.
        (
            {**step(1, 0), "rebuilt": {".x": {**TENSOR, "shape": 5}}},
            "a 'step' record whose 'rebuilt' is not what the check sends (its leaf '.x')",
        ),
        (
            {**step(1, 0), "output": {".x": {**TENSOR, "shape": ["1"]}}},
            "a 'step' record whose 'output' is not what the check sends (its leaf '.x')",
        ),
        (
            {**step(1, 0), "output": {".x": {**TENSOR, "strides": [True]}}},
            "a 'step' record whose 'output' is not what the check sends (its leaf '.x')",
        ),
        (
            {**step(1, 0), "output": {".x": {**TENSOR, "kind": "array", "values": None}}},
            "a 'step' record whose 'output' is not what the check sends (its leaf '.x')",
        ),
        (
            {**step(1, 0), "output": {".x": {k: v for k, v in TENSOR.items() if k != "sha256"}}},
            "a 'step' record whose 'output' is not what the check sends (its leaf '.x')",
        ),
        (
            {**step(1, 0), "pp_reqs": [{".a": VALUE}, {".b": {**VALUE, "key": 1}}]},
            "a 'step' record whose 'pp_reqs' is not what the check sends (its leaf '.b' of "
            "request 1)",
        ),
        (
            {**step(1, 0), "single_reqs": [{".a": {**VALUE, "limit": ["x"]}}]},
            "a 'step' record whose 'single_reqs' is not what the check sends (its leaf '.a' of "
            "request 0)",
        ),
        (
            {**step(1, 0), "output": {".x": {**VALUE, "kind": "other"}}},
            "a 'step' record whose 'output' is not what the check sends (its leaf '.x')",
        ),
        (
            {**step(1, 0), "output": {".x": {**VALUE, "extra": "1"}}},
            "a 'step' record whose 'output' is not what the check sends (its leaf '.x')",
        ),
        (
            {"event": "wire", "records": {"a": [{}, {}]}},
            "a 'wire' record whose 'records' is not what the check sends (its leaf 'a')",
        ),
        (
            {
                "event": "driving",
                "batch_size": 1,
                "step": 0,
                "method": "m",
                "text": "t",
                "fault": None,
                "location": {"file": "f", "line": "1", "function": "g"},
            },
            "a 'driving' record whose 'location' is not",
        ),
    ],
)
def test_a_forged_field_is_refused_by_the_schema(record, said):
    with pytest.raises(ValueError) as caught:
        check_fields(record)
    assert str(caught.value).startswith(said)


@pytest.mark.parametrize(
    "leaf",
    [
        TENSOR,
        {**TENSOR, "kind": "array", "device": "numpy", "strides": [-4]},
        {**TENSOR, "shape": None, "strides": None, "layout": "nested", "values": "[nested]"},
        {**TENSOR, "quantization": "('torch.per_tensor_affine', 0.1, 0)"},
        VALUE,
        {**VALUE, "key": "not compared", "limit": "max_digested_items"},
    ],
)
def test_every_kind_of_leaf_the_child_sends_is_taken(leaf):
    assert check_fields({**step(1, 0), "output": {".x": leaf}}) == "step"


_SIZES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
_ANY = st.one_of(
    st.builds(step, st.integers(1, 4), st.integers(0, 5)),
    st.builds(requests, st.integers(1, 4), st.integers(0, 5)),
    st.builds(again, st.integers(1, 4), st.integers(0, 5), st.integers(0, 5)),
    st.builds(
        lambda size, index: {"event": "no_output", "batch_size": size, "step": index, "why": ""},
        st.integers(1, 4),
        st.integers(0, 5),
    ),
    st.builds(
        lambda size, index: {
            "event": "undescribable",
            "batch_size": size,
            "step": index,
            "what": "x",
            "error_type": "E",
            "message": "",
            "location": None,
        },
        st.integers(1, 4),
        st.integers(0, 5),
    ),
    st.builds(
        lambda size, index, first: {
            "event": "reqs",
            "batch_size": size,
            "step": index,
            "first": first,
            "single_reqs": [{}],
            "pp_reqs": [{}],
        },
        st.integers(1, 4),
        st.integers(0, 5),
        st.integers(0, 4),
    ),
    st.just(MADE),
    st.just({"event": "ready"}),
    st.just(START),
    st.just({**START, "given": True}),
    st.just({"event": "locations", "subjects": {}}),
    st.just(END),
    st.just({"event": "failed", "text": "x"}),
    st.just({"event": "rank0_failed", "batch_size": 1, "reason": "x"}),
)


@settings(max_examples=300, deadline=None)
@given(sizes=_SIZES, steps=st.integers(1, 4), records=st.lists(_ANY, max_size=80))
def test_whatever_is_sent_the_run_moves_on_at_most_two_times_a_step_and_four_more(
    sizes, steps, records
):
    protocol = Protocol(sizes, steps, 3)
    moved = 0
    for record in records:
        try:
            moved += protocol.take(record)
        except ValueError:
            break
    # With given outputs (at most 3 here) the steps are theirs: the larger bound of the two.
    most = max(steps, 3)
    assert moved <= 2 * most * len(sizes) + 4
