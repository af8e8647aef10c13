"""The bounds on fingerprints and on deflated storages are fields of Limits: each, set low with
--limit, stops its command with a line naming the field, and the defaults read what they read."""

from __future__ import annotations

import ast
import io
import json
import zipfile
from pathlib import Path

import pytest
from helpers import REPO, cli
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.limits import Limits
from ppaux.suggestions import RaiseLimit

CONSISTENT = REPO / "fixtures" / "skew" / "fingerprints" / "consistent"


def test_a_fingerprint_past_max_fingerprint_bytes_is_one_error_line_naming_it():
    files = sorted(CONSISTENT.glob("*.json"))
    assert cli("check-skew", str(CONSISTENT)).exit_code == 0
    low = min(f.stat().st_size for f in files) - 1
    result = cli("check-skew", str(CONSISTENT), "--limit", f"max_fingerprint_bytes={low}")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"ppaux: error: {f}: larger than {low} bytes (limit max_fingerprint_bytes={low} "
        "reached); raise it with --limit max_fingerprint_bytes=N"
        for f in files
    ]
    high = max(f.stat().st_size for f in files)
    raised = cli("check-skew", str(CONSISTENT), "--limit", f"max_fingerprint_bytes={high}")
    assert raised.exit_code == 0, raised.output


def test_a_baseline_past_max_fingerprint_bytes_is_refused_naming_it():
    first = str(CONSISTENT / "pp0.json")
    result = cli("check-skew", first, "--baseline", first, "--limit", "max_fingerprint_bytes=10")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"ppaux: error: {first}: larger than 10 bytes (limit max_fingerprint_bytes=10 reached); "
        "raise it with --limit max_fingerprint_bytes=N\n"
    )


def test_the_library_carries_the_limit_as_data():
    from ppaux.skew import FingerprintError, load, load_paths

    path = str(CONSISTENT / "pp0.json")
    with pytest.raises(FingerprintError) as caught:
        load(path, Limits(max_fingerprint_bytes=10))
    assert caught.value.suggestions == (RaiseLimit("max_fingerprint_bytes", 10),)
    found, problems = load_paths([str(CONSISTENT)], Limits(max_fingerprint_bytes=10))
    assert found == [] and len(problems) == len(list(CONSISTENT.glob("*.json")))
    assert all(p.reason.endswith("(limit max_fingerprint_bytes=10 reached)") for p in problems)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=20_000))
def test_max_fingerprint_bytes_refuses_exactly_the_larger_files(limit):
    from ppaux.skew import FingerprintError, load

    path = CONSISTENT / "pp0.json"
    if limit >= path.stat().st_size:
        assert load(str(path), Limits(max_fingerprint_bytes=limit)).source == str(path)
        return
    with pytest.raises(FingerprintError) as caught:
        load(str(path), Limits(max_fingerprint_bytes=limit))
    assert caught.value.suggestions == (RaiseLimit("max_fingerprint_bytes", limit),)
    assert f"(limit max_fingerprint_bytes={limit} reached)" in caught.value.reason


def _deflated_dump(tmp_path: Path) -> str:
    """A torch.save file of one 64-float tensor, every record deflated (256 storage bytes)."""
    import torch

    buffer = io.BytesIO()
    torch.save({"a": torch.zeros(64)}, buffer)
    source = zipfile.ZipFile(io.BytesIO(buffer.getvalue()))
    path = tmp_path / "deflated.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in source.namelist():
            archive.writestr(name, source.read(name))
    return str(path)


@pytest.mark.torch
def test_deflated_storages_past_max_deflated_bytes_are_refused_naming_it(tmp_path):
    from ppaux.dump import read_dump
    from ppaux.errors import ReadMismatch

    path = _deflated_dump(tmp_path)
    assert read_dump(path).root["a"].shape == (64,)  # 256 bytes: checked and read
    assert read_dump(path, Limits(max_deflated_bytes=256)).root["a"].shape == (64,)
    with pytest.raises(ReadMismatch) as caught:
        read_dump(path, Limits(max_deflated_bytes=255))
    assert caught.value.suggestions == (RaiseLimit("max_deflated_bytes", 255),)
    assert caught.value.reason.endswith("(limit max_deflated_bytes=255 reached)")

    result = cli("inspect", path, "--limit", "max_deflated_bytes=255", "--format", "json")
    (found,) = json.loads(result.stdout)["findings"]
    assert found["code"] == "PP202"
    assert "inflate past 255 bytes" in found["message"]
    assert "(limit max_deflated_bytes=255 reached)" in found["message"]
    assert found["suggestions"] == [{"limit": "max_deflated_bytes", "value": 255}]
    assert result.exit_code == 1, result.output
    text = cli("inspect", path, "--limit", "max_deflated_bytes=255")
    assert "raise it with --limit max_deflated_bytes=N" in text.stdout
    assert cli("inspect", path).exit_code == 0


# ----------------------------------------------------------------------------------------------
# max_source_bytes: each sglang source file read for a fingerprint

TREE = REPO / "fixtures" / "skew" / "trees" / "v0523"
SOURCE = "srt/sampling/sampling_observer_pp.py"


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=40_000))
def test_max_source_bytes_refuses_exactly_the_larger_files(limit):
    from ppaux.sglang_source.tree import UnreadableFile, locate

    tree = locate(str(TREE), Limits(max_source_bytes=limit))
    assert tree is not None
    size = (TREE / "sglang" / SOURCE).stat().st_size
    if limit >= size:
        assert tree.read(SOURCE) == (TREE / "sglang" / SOURCE).read_bytes()
        return
    with pytest.raises(UnreadableFile) as caught:
        tree.read(SOURCE)
    assert (
        caught.value.reason == f"larger than {limit} bytes (limit max_source_bytes={limit} reached)"
    )
    assert caught.value.suggestions == (RaiseLimit("max_source_bytes", limit),)


def test_fingerprint_names_the_limit_that_kept_a_file_unread_and_how_to_raise_it(tmp_path):
    out = tmp_path / "fp.json"
    result = cli(
        "fingerprint", "--sglang-path", str(TREE), "--limit", "max_source_bytes=100", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    files = json.loads(out.read_text(encoding="utf-8"))["sglang"]["files"]
    reason = "larger than 100 bytes (limit max_source_bytes=100 reached)"
    assert files and all(f["status"] == "unreadable" and f["reason"] == reason for f in files)
    assert result.stderr.splitlines() == [
        f"ppaux: warning: {f['path']}: {reason}; raise it with --limit max_source_bytes=N"
        for f in files
    ]
    largest = max(p.stat().st_size for p in TREE.rglob("*.py"))
    raised = cli(
        "fingerprint",
        "--sglang-path",
        str(TREE),
        "--limit",
        f"max_source_bytes={largest}",
        "-o",
        str(out),
    )
    assert raised.exit_code == 0 and raised.stderr == ""
    files = json.loads(out.read_text(encoding="utf-8"))["sglang"]["files"]
    assert all(f["status"] != "unreadable" for f in files)


def test_fingerprint_refuses_a_bad_limit_in_one_line():
    result = cli("fingerprint", "--limit", "max_source_bytes=none")
    assert result.exit_code == 2
    assert result.stderr == (
        "ppaux: error: --limit: limit max_source_bytes must be a whole number in ASCII digits "
        "(0-9, nothing else), not 'none'\n"
    )


# ----------------------------------------------------------------------------------------------
# max_digested_items: what one description of a checked observer's value digests whole


def _wide_observer(tmp_path: Path) -> str:
    """The worked example's observer, its output holding 300 distinct lists of 3 floats (a
    value of 1,201 items, digested whole: more than a walk takes apart)."""
    text = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
    head, device, tail = text.partition("class EntropyOutput:")
    marker = "        self.entropy = entropy\n"
    assert device and tail.count(marker) == 1
    wide = "        self.table = [[float(i)] * 3 for i in range(300)]\n"
    text = head + device + tail.replace(marker, marker + wide)
    (tmp_path / "wide.py").write_text(text, encoding="utf-8")
    return f"{tmp_path / 'wide.py'}:EntropyObserver"


@pytest.mark.torch
def test_check_observer_names_the_limit_that_left_a_value_uncompared(tmp_path):
    target = _wide_observer(tmp_path)
    args = ("check-observer", target, "--batch-size", "1", "--steps", "1", "--format", "json")
    low = cli(*args, "--limit", "max_digested_items=1000")
    assert low.exit_code == 0, low.output
    assert low.stderr == ""  # said once, in the finding
    report = json.loads(low.stdout)
    assert report["observer"]["limits_reached"] == ["max_digested_items"]
    [item] = report["findings"]
    assert item["code"] == "PP716"
    # The limit to raise, with the value it had in the run (not null).
    assert item["suggestions"] == [{"limit": "max_digested_items", "value": 1000}]
    text = cli(*args[:-2], "--limit", "max_digested_items=1000")
    assert text.exit_code == 0 and text.stderr == ""
    assert " ".join(text.stdout.split()).count("raise it with --limit max_digested_items=N") == 1
    raised = cli(*args, "--limit", "max_digested_items=1201")
    assert raised.exit_code == 0 and raised.stderr == ""
    report = json.loads(raised.stdout)
    assert "limits_reached" not in report["observer"]


@pytest.mark.torch
def test_the_library_lists_the_uncompared_value_with_the_limit(tmp_path):
    from ppaux.observer import ObserverOptions, check_observer

    options = ObserverOptions(batch_sizes=(1,), steps=1)
    target = _wide_observer(tmp_path)
    report = check_observer(target, options, limits=Limits(max_digested_items=1000))
    [note] = [n for n in report.notes if "not compared" in n]
    why = "not compared: more than 1,000 items to digest (limit max_digested_items=1000 reached)"
    assert f".table of the output: {why}" in note
    assert report.data["observer"]["limits_reached"] == ["max_digested_items"]
    assert check_observer(target, options).data["observer"].get("limits_reached") is None


def test_check_observer_refuses_a_bad_limit_in_one_line():
    result = cli("check-observer", "x.py:Obs", "--limit", "max_digested_items=-3")
    assert result.exit_code == 2
    assert result.stderr == (
        "ppaux: error: --limit: limit max_digested_items must be from 1 to "
        "9223372036854775807, not '-3'\n"
    )


# ----------------------------------------------------------------------------------------------
# max_statement_tokens and max_syntax_depth: how much of one sglang source file is analysed

SCHEDULER = "srt/managers/scheduler_pp_mixin.py"


def _tree_with_scheduler(tmp_path: Path, text: str) -> Path:
    import shutil

    root = tmp_path / "tree"
    shutil.copytree(TREE, root)
    (root / "sglang" / SCHEDULER).write_text(text, encoding="utf-8")
    return root


def _fingerprint_files(root: Path, out: Path, *limits: str) -> tuple[dict[str, dict], list[str]]:
    args = ["fingerprint", "--sglang-path", str(root), "-o", str(out)]
    for limit in limits:
        args += ["--limit", limit]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    files = json.loads(out.read_text(encoding="utf-8"))["sglang"]["files"]
    return {f["role"]: f for f in files}, result.stderr.splitlines()


#: One logical line of 40,004 tokens ("x", "=", "[", 20,000 numbers and commas, "]") and 60 KB,
#: longer than any part the parser is given, after a line of its own.
LONG_STATEMENT = "import os\nx = [" + "1, " * 20_000 + "]\n"


@pytest.mark.parametrize(("limit", "refused"), [(1_000, True), (39_990, True), (40_100, False)])
def test_max_statement_tokens_refuses_a_longer_statement_naming_the_limit(tmp_path, limit, refused):
    root = _tree_with_scheduler(tmp_path, LONG_STATEMENT)
    files, warnings = _fingerprint_files(
        root, tmp_path / "fp.json", f"max_statement_tokens={limit}"
    )
    scheduler = files["scheduler"]
    if not refused:
        assert scheduler["status"] == "ok" and warnings == []
        return
    reason = (
        f"not analysable: line 2: one statement of more than {limit:,} tokens, more than"
        f" sglang's sources ever hold, not parsed (limit max_statement_tokens={limit} reached)"
    )
    assert (scheduler["status"], scheduler["reason"]) == ("unparsable", reason)
    assert warnings == [
        f"ppaux: warning: {scheduler['path']}: {reason};"
        " raise it with --limit max_statement_tokens=N"
    ]


def test_the_default_max_statement_tokens_is_the_fields(tmp_path):
    """A statement of 60,000 tokens is past the default of 50,000, and read when raised."""
    root = _tree_with_scheduler(tmp_path, "import os\nx = [" + "1, " * 30_000 + "]\n")
    files, _ = _fingerprint_files(root, tmp_path / "fp.json")
    assert files["scheduler"]["reason"].endswith("(limit max_statement_tokens=50000 reached)")
    files, _ = _fingerprint_files(root, tmp_path / "fp.json", "max_statement_tokens=60100")
    assert files["scheduler"]["status"] == "ok"


def _nested(levels: int) -> str:
    """A function whose one statement nests a sum of ``levels`` terms (a tree about that deep)."""
    return "def f(x):\n    return " + "+".join(["x"] * levels) + "\n"


def test_max_syntax_depth_refuses_a_deeper_tree_naming_the_limit(tmp_path):
    root = _tree_with_scheduler(tmp_path, _nested(400))
    files, warnings = _fingerprint_files(root, tmp_path / "fp.json")
    scheduler = files["scheduler"]
    reason = (
        "not analysable: its syntax nests deeper than 300 levels"
        " (limit max_syntax_depth=300 reached)"
    )
    assert (scheduler["status"], scheduler["reason"]) == ("unparsable", reason)
    assert warnings == [
        f"ppaux: warning: {scheduler['path']}: {reason}; raise it with --limit max_syntax_depth=N"
    ]
    files, warnings = _fingerprint_files(root, tmp_path / "fp.json", "max_syntax_depth=500")
    assert files["scheduler"]["status"] == "ok" and warnings == []


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=10, max_value=200))
def test_max_syntax_depth_bounds_the_tree_at_the_given_depth(levels):
    """A sum of n terms nests n - 1 operations below the statement, which lies 3 levels below
    the module (function, return, expression): a limit well above is read, well below refused."""
    from ppaux.sglang_source.capability import SourceFile
    from ppaux.sglang_source.source_files import Parsed as _Parsed
    from ppaux.sglang_source.source_files import checked_depth as _checked_depth

    module = ast.parse(_nested(levels))
    parsed = _Parsed(SourceFile("scheduler", "s.py", "ok", "0"), module)
    assert _checked_depth(parsed, levels + 10).module is module
    refused = _checked_depth(parsed, levels - 10)
    assert refused.module is None
    assert refused.file.suggestions == (RaiseLimit("max_syntax_depth", levels - 10),)
    assert refused.file.reason is not None
    assert refused.file.reason.endswith(f"(limit max_syntax_depth={levels - 10} reached)")


def test_max_syntax_depth_raised_past_what_the_analysis_can_walk_still_refuses():
    """Past 800 levels the analysis would meet Python's recursion limit: a raised limit still
    refuses such a tree there, with no limit to raise."""
    from ppaux.sglang_source.capability import SourceFile
    from ppaux.sglang_source.source_files import Parsed as _Parsed
    from ppaux.sglang_source.source_files import checked_depth as _checked_depth

    module = ast.parse(_nested(900))
    parsed = _Parsed(SourceFile("transport", "t.py", "ok", "0"), module)
    refused = _checked_depth(parsed, 1_000_000)
    assert refused.module is None
    assert refused.file.reason == (
        "not analysable: its syntax nests deeper than 800 levels, the most the analysis can"
        " walk within Python's recursion limit"
    )
    assert refused.file.suggestions == ()
    assert _checked_depth(_Parsed(parsed.file, ast.parse(_nested(700))), 1_000_000).module


# ----------------------------------------------------------------------------------------------
# max_analysed_source_bytes: the sglang source one analysis parses, its files together

#: The files the analysis of the fixture tree parses, in the order it parses them.
PARSED_IN_ORDER = (
    ("scheduler", "srt/managers/scheduler_pp_mixin.py"),
    ("transport", "srt/sampling/sampling_observer_pp.py"),
    ("logprobs", "srt/managers/utils.py"),
    ("wire", "srt/distributed/parallel_state.py"),
)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=20_000))
def test_max_analysed_source_bytes_parses_files_in_order_while_they_fit(limit):
    from ppaux.sglang_source import analyse

    cap = analyse(str(TREE), Limits(max_analysed_source_bytes=limit))
    used = 0
    expected = []
    for role, relative in PARSED_IN_ORDER:
        size = (TREE / "sglang" / relative).stat().st_size
        if used + size <= limit:
            used += size
            expected.append((role, "ok"))
        else:
            expected.append((role, "unreadable"))
    assert [(f.role, f.status) for f in cap.files] == expected
    for file in cap.files:
        if file.status == "unreadable":
            assert file.reason is not None and file.reason.startswith("not parsed: ")
            assert file.reason.endswith(
                f"more than the {limit} bytes of source one analysis parses"
                f" (limit max_analysed_source_bytes={limit} reached)"
            )
            assert file.suggestions == (RaiseLimit("max_analysed_source_bytes", limit),)
    if expected[1] == ("transport", "unreadable"):
        assert cap.transport == "unknown" and cap.sender_validates is None


def test_a_file_over_the_analysed_bytes_is_unknown_and_named_on_the_command_line(tmp_path):
    out = tmp_path / "fp.json"
    scheduler = (TREE / "sglang" / PARSED_IN_ORDER[0][1]).stat().st_size
    result = cli(
        "fingerprint",
        "--sglang-path",
        str(TREE),
        "--limit",
        f"max_analysed_source_bytes={scheduler - 1}",
        "-o",
        str(out),
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))["sglang"]
    first = doc["files"][0]
    assert (first["role"], first["status"]) == ("scheduler", "unreadable")
    assert first["reason"] == (
        f"not parsed: {scheduler} bytes more than the {scheduler - 1} bytes of source one"
        f" analysis parses (limit max_analysed_source_bytes={scheduler - 1} reached)"
    )
    assert doc["scheduler_calls"] is None and "scheduler_calls" in doc["unknown"]
    assert "raise it with --limit max_analysed_source_bytes=N" in result.stderr.splitlines()[0]
