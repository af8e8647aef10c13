"""A key the JSON report shows escaped (a NUL, DEL, a lone surrogate) also comes as its exact
code points (``key_code_points``), which give back the key ``pickle.loads`` reads; a key shown
as it is has no such field."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppaux.dump import inspect_paths
from ppaux.report import Format, render

#: Any character, and often those a report escapes (hypothesis leaves out lone surrogates).
_CHARACTERS = st.one_of(
    st.characters(), st.sampled_from(["\x00", "\x7f", "\ud800", "\u202e", "\\"])
)


def _entries(path: Path) -> list[dict[str, object]]:
    document = json.loads(render(inspect_paths([str(path)]), Format.JSON))
    return document["files"][0]["payloads"][0]["entries"]


def _exact(entry: dict[str, object]) -> object:
    points = entry.get("key_code_points")
    return entry["key"] if points is None else "".join(map(chr, points))  # type: ignore[arg-type]


def test_escaped_keys_come_with_their_code_points(tmp_path: Path) -> None:
    keys = ["a\x00b", "_\x7fmsg_type__", "next_token_ids\ud800", "plain"]
    path = tmp_path / "keys.pkl"
    path.write_bytes(pickle.dumps(dict.fromkeys(keys, 1), protocol=2))
    read = list(pickle.loads(path.read_bytes()))
    entries = _entries(path)
    assert [_exact(e) for e in entries] == read == keys
    assert entries[0]["key"] == "a\\x00b" and entries[0]["key_code_points"] == [97, 0, 98]
    assert "key_code_points" not in entries[3]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.text(_CHARACTERS, max_size=12), min_size=1, max_size=4, unique=True))
def test_every_key_round_trips(tmp_path: Path, keys: list[str]) -> None:
    path = tmp_path / "keys.pkl"
    path.write_bytes(pickle.dumps(dict.fromkeys(keys, 1), protocol=2))
    assert [_exact(e) for e in _entries(path)] == list(pickle.loads(path.read_bytes()))
