"""Replay with sglang's own transport read from the release wheels: it agrees with ppaux's."""

from __future__ import annotations

import pytest
import wheels
from test_replay_fixtures import replayable_dumps

from ppaux.replay import Impl, ReplayOptions, Sender, Transport, replay_paths

pytestmark = [pytest.mark.wheels, pytest.mark.usefixtures("in_repo"), pytest.mark.torch]


@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
@pytest.mark.parametrize(
    "sender, transport", [(Sender.VALIDATING, Transport.NONE), (Sender.LEGACY, Transport.WIRE)]
)
def test_release_agrees_with_the_reference_on_every_fixture(version, sender, transport):
    wheel = str(wheels.sglang_wheel(version))
    report = replay_paths(
        ["fixtures/dumps"],
        ReplayOptions(impl=Impl.BOTH, sglang_path=wheel, sender=sender, transport=transport),
    )
    found = report.data["replay"]["implementations"]["sglang"]
    assert found["version"] == version and version in found["stock_releases"]
    assert len(report.data["results"]) == replayable_dumps()
    payloads = [p for r in report.data["results"] for p in r["payloads"]]
    assert [d for p in payloads for d in p["divergences"]] == []
    assert "PP406" not in {f.code for f in report.findings}


@pytest.mark.distributed
def test_release_runs_on_the_receiver_process():
    wheel = str(wheels.sglang_wheel("0.5.23"))
    report = replay_paths(
        ["fixtures/dumps/aux_list.pt", "fixtures/dumps/clean_output.pt"],
        ReplayOptions(
            impl=Impl.SGLANG,
            sglang_path=wheel,
            sender=Sender.LEGACY,
            transport=Transport.TORCH_DISTRIBUTED,
            timeout_s=30,
        ),
    )
    listed, clean = report.data["results"]
    assert (listed["stage"], listed["error"]) == (
        "pop",
        "received a non-tensor auxiliary PP output",
    )
    assert list(listed["payloads"][0]["runs"]) == ["sglang"]
    assert clean["outcome"] == "ok"
