"""Reports stay bounded by documented limits: entries listed per tensor dict
(``max_report_entries``), findings listed per code and file (``max_findings_per_code``), and a
long string repeated across a replay report given whole once.

The expected counts come from how the files are built here or in
``fixtures/make_adversarial.py``, never from ppaux.

Several tests run ``ppaux inspect`` on the same bundled fixture with the same limits: the
reading step (``ppaux.dump.inspect_paths``) of a file under ``fixtures/`` is done once per
module for each set of arguments, and each command gets a deep copy of that result, as a cache
would give it; the rest of the command (options, gate, selection, format, exit code) runs every
time. Files the tests write are read every time.
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, cli

from ppaux.limits import Limits
from ppaux.report.document import Report

WIDE = REPO / "fixtures/adversarial/bomb_wide_bad_keys.pkl"
#: How make_adversarial builds it: 120,000 int keys, 5,000 auxiliary lists, and __msg_type__.
WIDE_INT_KEYS = 120_000
WIDE_AUX_LISTS = 5_000
WIDE_KEYS = WIDE_INT_KEYS + WIDE_AUX_LISTS + 1


@pytest.fixture(autouse=True, scope="module")
def _fixtures_read_once() -> Iterator[None]:
    import ppaux.dump

    original = ppaux.dump.inspect_paths
    memo: dict[str, Report] = {}

    def read_once(paths: Iterable[str], limits: Limits = Limits(), **options: Any) -> Report:
        paths = list(paths)
        fixtures = REPO / "fixtures"
        if options.get("streams") or not all(
            Path(p).resolve().is_relative_to(fixtures) for p in paths
        ):
            return original(paths, limits, **options)
        key = repr((paths, limits, options.get("release")))
        if key not in memo:
            memo[key] = original(paths, limits, **options)
        return copy.deepcopy(memo[key])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ppaux.dump, "inspect_paths", read_once)
        yield


def _json(*args: str) -> tuple[int, dict]:
    result = cli(*args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def _by_code(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


def test_findings_per_code_are_cut_and_counted() -> None:
    code, report = _json("inspect", str(WIDE))
    assert code == 1
    non_string = _by_code(report, "PP103")
    aux = _by_code(report, "PP101")
    # 100 listed, then one that counts the rest; the same code and severity.
    assert len(non_string) == 101 and len(aux) == 101
    assert non_string[-1]["extra"] == {"omitted": WIDE_INT_KEYS - 100}
    assert aux[-1]["extra"] == {"omitted": WIDE_AUX_LISTS - 100}
    assert non_string[-1]["severity"] == "error" and non_string[-1]["key"] is None
    assert "max_findings_per_code" in non_string[-1]["message"]
    assert report["summary"]["error"] == 202


def test_statistics_count_the_findings_not_listed() -> None:
    result = cli("inspect", str(WIDE), "--statistics")
    assert result.exit_code == 1
    assert f"{WIDE_INT_KEYS}  PP103" in result.stdout
    assert f"{WIDE_AUX_LISTS}  PP101" in result.stdout
    # and PP118: the pickle is written by hand, not as pickle.dump writes it.
    assert f"{WIDE_KEYS} findings in 3 codes" in result.stdout


def test_limit_changes_the_cut_and_selection_sees_the_summary() -> None:
    _, report = _json("inspect", str(WIDE), "--limit", "max_findings_per_code=5")
    assert len(_by_code(report, "PP103")) == 6
    assert _by_code(report, "PP103")[-1]["extra"]["omitted"] == WIDE_INT_KEYS - 5
    code, selected = _json("inspect", str(WIDE), "--ignore", "PP103")
    assert code == 1 and not _by_code(selected, "PP103") and len(_by_code(selected, "PP101")) == 101
    code, none = _json("inspect", str(WIDE), "--ignore", "PP103,PP101")
    assert code == 0 and [f["code"] for f in none["findings"]] == ["PP118"]


def test_entries_are_cut_and_counted() -> None:
    _, report = _json("inspect", str(WIDE))
    (payload,) = report["files"][0]["payloads"]
    assert len(payload["entries"]) == 10_000
    assert payload["entries_omitted"] == WIDE_KEYS - 10_000
    text = cli("inspect", str(WIDE)).stdout
    assert f"; {WIDE_KEYS} keys)" in text
    # The table draws 1,000 rows: 999 entries and the row that counts the rest.
    assert f"... and {WIDE_KEYS - 999} more keys" in text


def test_a_dict_under_the_cut_keeps_its_shape() -> None:
    _, report = _json("inspect", str(REPO / "fixtures/dumps/clean_output.pt"))
    assert all("entries_omitted" not in p for p in report["files"][0]["payloads"])


def test_tensor_bytes_count_entries_not_listed() -> None:
    dump = str(REPO / "fixtures/dumps/clean_output.pt")
    _, full = _json("inspect", dump)
    _, cut = _json("inspect", dump, "--limit", "max_report_entries=1")
    (payload,) = cut["files"][0]["payloads"]
    assert len(payload["entries"]) == 1 and payload["entries_omitted"] >= 1
    assert full["files"][0]["tensor_bytes"] > 0
    assert cut["files"][0]["tensor_bytes"] == full["files"][0]["tensor_bytes"]


def test_release_keys_are_checked_past_the_cut(tmp_path: Path) -> None:
    # An output message whose next_token_ids comes after 50 other keys: cutting the listing at
    # 3 entries must not make the release check call it missing.
    message = {f"extra{k}": None for k in range(50)}
    message["next_token_ids"] = None
    message["__msg_type__"] = "output"
    present = tmp_path / "present.pkl"
    present.write_bytes(pickle.dumps(message, protocol=4))
    del message["next_token_ids"]
    missing = tmp_path / "missing.pkl"
    missing.write_bytes(pickle.dumps(message, protocol=4))
    limit = ("--limit", "max_report_entries=3", "--release", "0.5.23")
    _, report = _json("inspect", str(present), *limit)
    assert not [f for f in report["findings"] if "next_token_ids" in f["message"]]
    _, report = _json("inspect", str(missing), *limit)
    assert [f for f in report["findings"] if "next_token_ids" in f["message"]]


@pytest.mark.torch
def test_replay_gives_a_long_key_whole_once() -> None:
    dump = REPO / "fixtures/adversarial/bomb_long_key_many_dicts.pt"
    # Past replay's own max_payloads (256): a user who raises it gets the 1,000 replays.
    result = cli("replay", str(dump), "--format", "json", "--limit", "max_payloads=1000")
    assert result.exit_code == 1, result.stdout
    key = "k" * 16384
    # 1,000 payloads quote the key in their results and findings: given whole only where a
    # string first appears, the report stays small (it was 130 MB).
    assert len(result.stdout) < 8_000_000
    assert key in result.stdout
    assert "(16413 characters, given whole above)" in result.stdout
    report = json.loads(result.stdout)
    assert len(report["results"][0]["payloads"]) == 1000


def _squash_by_definition(key: str) -> str:
    # The near-miss folding as docs/catalogue.md describes PP104's: NFKC, casefold, format
    # characters and separators (whitespace, '_', '.', '-') dropped. Look-alike letters of other
    # scripts are left out: no ASCII character is one.
    import re
    import unicodedata

    text = unicodedata.normalize("NFKC", key[:256]).casefold()
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return re.sub(r"[\s_.\-]", "", text)


def test_ascii_keys_fold_as_the_definition_says() -> None:
    # The checks fold ASCII keys by a shortcut; it must agree with the definition on every
    # ASCII character, alone and inside a prefix-like key.
    from ppaux.dump.near_miss import squashed

    keys = [chr(c) for c in range(128)]
    keys += [f"__Sampling{chr(c)}Observer_OUTPUT__.x" for c in range(128)]
    keys += ["SAMPLING-observer.output", " \t__sampling_observer_output__", "x" * 300]
    for key in keys:
        assert squashed(key) == _squash_by_definition(key), repr(key)


# ----------------------------------------------------------------------------------------------
# Limits that refuse a file whose shape no real dump comes near

_FIXTURES = str(REPO / "fixtures")


def _corpus():
    import sys

    if _FIXTURES not in sys.path:
        sys.path.insert(0, _FIXTURES)
    import make_adversarial

    return make_adversarial


def _one_entry_dicts(count: int) -> bytes:
    # A list of `count` output messages, each {aux key: a list}, as a plain pickle.
    return pickle.dumps([{"__sampling_observer_output__.x": [1]} for _ in range(count)], 4)


def test_max_payloads_counts_tensor_dicts(tmp_path: Path) -> None:
    dump = tmp_path / "thirty.pkl"
    dump.write_bytes(_one_entry_dicts(30))
    code, report = _json("inspect", str(dump), "--limit", "max_payloads=30")
    assert code == 1 and len(report["files"][0]["payloads"]) == 30
    refused = cli("inspect", str(dump), "--limit", "max_payloads=29")
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        f"ppaux: error: {dump}: the file holds too many tensor dicts (limit max_payloads=29 "
        "reached); raise it with --limit max_payloads=N"
    )


def test_the_corpus_file_of_330000_dicts_is_refused() -> None:
    result = cli("inspect", str(REPO / "fixtures/adversarial/bomb_many_payloads.pt"))
    assert result.exit_code == 2
    assert "limit max_payloads=10000" in result.stderr


def test_max_tensor_entries_counts_entries_holding_a_tensor(tmp_path: Path) -> None:
    corpus = _corpus()
    dump = tmp_path / "message.pt"
    # The message helper writes next_token_ids and one auxiliary tensor: two tensor entries.
    dump.write_bytes(corpus.torch_zip(corpus.pickle_of(corpus.message())).data)
    assert cli("inspect", str(dump), "--limit", "max_tensor_entries=2").exit_code == 0
    refused = cli("inspect", str(dump), "--limit", "max_tensor_entries=1")
    assert refused.exit_code == 2
    assert "its tensor dicts hold too many tensors (limit max_tensor_entries=1 reached);" in (
        refused.stderr
    )


def test_findings_past_the_cut_are_counted_not_built() -> None:
    # 240,000 auxiliary tensors, each not contiguous (PP106) and on another device than the
    # message's cpu tensor (PP105), as make_adversarial builds bomb_many_aux_tensors.
    dump = str(REPO / "fixtures/adversarial/bomb_many_aux_tensors.pt")
    code, report = _json("inspect", dump, "--limit", "max_tensor_entries=300000")
    assert code == 1
    for rule in ("PP105", "PP106"):
        found = _by_code(report, rule)
        assert len(found) == 101
        assert found[-1]["extra"] == {"omitted": 240_000 - 100}
        assert "the report lists the first 100" in found[-1]["message"]
    stats = cli("inspect", dump, "--limit", "max_tensor_entries=300000", "--statistics")
    assert "240000  PP105" in stats.stdout and "240000  PP106" in stats.stdout


def test_entries_listed_are_bounded_over_the_whole_file(tmp_path: Path) -> None:
    dump = tmp_path / "three.pkl"
    dump.write_bytes(
        pickle.dumps(
            [{f"__sampling_observer_output__.{k}": [1] for k in range(5)} for _ in range(3)], 4
        )
    )
    _, report = _json("inspect", str(dump), "--limit", "max_report_entries=7")
    payloads = report["files"][0]["payloads"]
    assert [len(p["entries"]) for p in payloads] == [5, 2, 0]
    assert [p.get("entries_omitted") for p in payloads] == [None, 3, 5]
    # Every entry is still checked: 15 auxiliary lists, 15 PP101.
    assert len(_by_code(report, "PP101")) == 15
