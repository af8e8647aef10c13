"""Replay reads its files under tighter limits than inspect (``ppaux.replay.REPLAY_LIMITS``).

A replay holds every value again as torch rebuilds it, beside torch's own ~210 MB, so three
corpus files under 1 MB that inspect reads in well under 250 MB took a replay past it (a 48 MiB
key, 125,001 keys, 1,000 tensor dicts). Replay refuses them with one line naming the file and
the limit, before torch is imported; given a larger limit, as the line says, it replays them.
"""

from __future__ import annotations

import json

import pytest
from helpers import REPO, ppaux_process

from ppaux.limits import Limits

ADVERSARIAL = REPO / "fixtures" / "adversarial"

#: Corpus file, the limit replay refuses it by, and what inspect's reader says past it.
REFUSED = [
    ("bomb_giant_string_key.pt", "max_pickle_bytes=16777216", "declares 50331659 bytes"),
    ("bomb_wide_bad_keys.pkl", "max_items=200000", "the pickle creates too many values"),
    ("bomb_long_key_many_dicts.pt", "max_payloads=256", "the file holds too many tensor dicts"),
]


@pytest.mark.torch
@pytest.mark.parametrize(("name", "limit", "why"), REFUSED)
def test_replay_refuses_a_file_past_its_own_limits_in_one_line(name, limit, why):
    path = f"fixtures/adversarial/{name}"
    done = ppaux_process("replay", path, "--format", "json")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"ppaux: error: {path}: ")
    assert why in line
    assert f"(limit {limit} reached); raise it with --limit {limit.split('=')[0]}=N" in line
    # The report still comes, naming the file among its problems.
    assert [p["path"] for p in json.loads(done.stdout)["problems"]] == [path]


@pytest.mark.parametrize(("name", "limit", "why"), REFUSED)
def test_inspect_reads_the_same_files_under_the_readers_limits(name, limit, why):
    done = ppaux_process("inspect", f"fixtures/adversarial/{name}", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    assert done.stderr == ""


@pytest.mark.torch
def test_a_raised_limit_lets_replay_read_the_file():
    done = ppaux_process(
        "replay",
        "fixtures/adversarial/bomb_giant_string_key.pt",
        "--limit",
        "max_pickle_bytes=67108864",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["problems"] == []
    (payload,) = report["results"][0]["payloads"]
    assert payload["outcome"] == "ok"


@pytest.mark.torch
def test_the_library_replays_under_replays_limits_unless_given_others():
    from ppaux.replay import ReplayOptions, replay_paths

    path = str(ADVERSARIAL / "bomb_wide_bad_keys.pkl")
    refused = replay_paths([path])
    assert [p.path for p in refused.problems] == [path]
    assert "limit max_items=200000 reached" in refused.problems[0].message
    read = replay_paths([path], ReplayOptions(limits=Limits()))
    assert read.problems == ()
    assert [r["path"] for r in read.data["results"]] == [path]
    assert read.findings  # its 125,001 keys are not tensors: a finding, counted past the cut
