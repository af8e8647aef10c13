"""A replay's report data is typed: its keys, and those of its settings, are the fields of
:class:`~ppaux.replay.results.ReplayData` and :class:`~ppaux.replay.results.ReplaySettings`."""

from __future__ import annotations

import json
import typing

import pytest
import torch

from ppaux.replay.results import ReplayData, ReplaySettings

pytestmark = pytest.mark.torch


def test_a_replays_data_holds_the_typed_fields_and_no_others(tmp_path):
    from ppaux.replay import replay_paths

    dump = tmp_path / "one.pt"
    torch.save({"pp_aux_output_entropy": torch.zeros(2), "hidden": torch.ones(2)}, dump)
    report = replay_paths([str(dump)])
    assert set(report.data) == set(typing.get_type_hints(ReplayData))
    assert set(report.data["replay"]) == set(typing.get_type_hints(ReplaySettings))
    assert [r["path"] for r in report.data["results"]] == [str(dump)]
    json.dumps(dict(report.data))  # plain data
