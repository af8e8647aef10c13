"""However many differences one record holds, the judge builds at most
``max_findings_per_code`` findings of a code; one more finding of that code counts the rest."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ppaux.limits import Limits
from ppaux.observer.judge import Judge


def judge(per_code: int) -> Judge:
    return Judge(
        target="forged.py:Observer",
        transport="wire",
        impl="ppaux",
        sender="ppaux",
        batch_sizes=(1,),
        steps=2,
        limits=Limits(max_findings_per_code=per_code),
    )


def changed(judged: Judge, leaves: int) -> None:
    """Step 0's output was ``leaves`` ints; step 1 changed every one of them."""
    judged.produced[(1, 0)] = {f".x{i}": {"type": "int", "key": "1"} for i in range(leaves)}
    judged.take(
        {
            "event": "again",
            "batch_size": 1,
            "step": 0,
            "by_step": 1,
            "output": {f".x{i}": {"type": "int", "key": "2"} for i in range(leaves)},
        }
    )


def test_thirty_thousand_changed_leaves_are_three_findings_and_a_count():
    judged = judge(3)
    changed(judged, 30_000)
    found = [f for f in judged.report().findings if f.code == "PP713"]
    assert [f.key for f in found[:3]] == [".x0", ".x1", ".x2"]
    assert len(found) == 4
    assert found[3].extra == {"omitted": 29_997}
    assert found[3].message.startswith("29997 more PP713 findings in this check are not listed")
    assert "limit max_findings_per_code=3 reached" in found[3].message


def test_under_the_limit_every_finding_is_listed():
    judged = judge(100)
    changed(judged, 5)
    found = [f for f in judged.report().findings if f.code == "PP713"]
    assert [f.key for f in found] == [".x0", ".x1", ".x2", ".x3", ".x4"]
    assert all("omitted" not in f.extra for f in found)


@given(st.integers(1, 50), st.integers(0, 120))
def test_listed_plus_counted_is_every_changed_leaf(per_code, leaves):
    judged = judge(per_code)
    changed(judged, leaves)
    found = [f for f in judged.report().findings if f.code == "PP713"]
    listed = [f for f in found if "omitted" not in f.extra]
    counted = sum(f.extra.get("omitted", 0) for f in found)
    assert len(listed) == min(per_code, leaves)
    assert len(listed) + counted == leaves


def _closed_by_peer(judged: Judge, step: int, peer: str) -> None:
    """Step ``step`` stopped on the wire: gloo's message names the peer and its port."""
    message = f"[../gloo/transport/tcp/pair.cc:553] Connection closed by peer {peer}"
    fault = {
        "stage": "wire",
        "side": "sender",
        "method": None,
        "error_type": "RuntimeError",
        "message": message,
        "name": None,
        "value": None,
        "where": None,
    }
    judged.take(
        {
            "event": "step",
            "batch_size": 1,
            "step": step,
            "sent": ["x"],
            "single": None,
            "pp": fault,
            "output_type": "Out",
            "output": {},
        }
    )


def test_a_peers_port_makes_no_second_finding():
    judged = judge(100)
    _closed_by_peer(judged, 0, "[127.0.0.1]:13718")
    _closed_by_peer(judged, 1, "[127.0.0.1]:40211")
    found = [f for f in judged.report().findings if f.code == "PP709"]
    assert len(found) == 1
    assert "Connection closed by peer [127.0.0.1]:13718" in found[0].message
    # Another peer is another message.
    _closed_by_peer(judged, 1, "[10.0.0.2]:40211")
    assert len([f for f in judged.report().findings if f.code == "PP709"]) == 2


def _sent_step(judged: Judge, names: list[str]) -> dict:
    judged.take(
        {
            "event": "step",
            "batch_size": 1,
            "step": 0,
            "sent": names,
            "single": None,
            "pp": None,
            "output_type": "Out",
            "output": {},
        }
    )
    [entry] = judged.report().data["steps"]
    return entry


@given(st.integers(0, 200))
def test_a_step_lists_the_first_fifty_names_sent_and_counts_the_rest(count):
    names = [f"k{i}" for i in range(count)]
    entry = _sent_step(judge(3), names)
    assert entry["sent"] == names[:50]
    assert entry["sent_left_out"] == max(count - 50, 0)
