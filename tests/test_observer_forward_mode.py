"""The stand-in batch carries ``forward_mode`` as sglang 0.5.23's ``ScheduleBatch`` holds it while
``consume`` runs in a decode step: ``ForwardMode.DECODE``, with the release's members and the
answers of its ``is_*`` methods (ppaux/data/forward_mode.json; the runtime tier checks them
against the release's own class). The expectations below are read off the release's source."""

from __future__ import annotations

from ppaux.observer.requests import standin_kit


def test_the_stand_in_batch_is_in_a_decode_step():
    batch = standin_kit().make_batch(standin_kit().make(2), "cpu")
    mode = batch.forward_mode
    assert (mode.name, int(mode)) == ("DECODE", 2)
    assert mode.is_decode() and mode.is_decode_or_idle() and mode.is_cuda_graph()
    assert not mode.is_extend() and not mode.is_prefill() and not mode.is_idle()
    assert not mode.is_extend(include_draft_extend_v2=True)
    assert mode is type(mode).DECODE


def test_the_members_are_the_releases():
    batch = standin_kit().make_batch([], "cpu")
    modes = type(batch.forward_mode)
    assert [(m.name, int(m)) for m in modes] == [
        ("EXTEND", 1),
        ("DECODE", 2),
        ("MIXED", 3),
        ("IDLE", 4),
        ("TARGET_VERIFY", 5),
        ("DRAFT_EXTEND_V2", 6),
        ("PREBUILT", 7),
        ("SPLIT_PREFILL", 8),
        ("DLLM_EXTEND", 9),
    ]
    assert modes.DRAFT_EXTEND_V2.is_extend(include_draft_extend_v2=True)
    assert not modes.DRAFT_EXTEND_V2.is_extend()
    assert modes.MIXED.is_extend() and modes.MIXED.is_mixed()
