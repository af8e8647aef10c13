"""A compressed log's findings say their places as lines of the decompressed text
(``run.log.gz (decompressed):1``) in every format, and no format points at a line of the
compressed bytes: GitHub's annotation and SARIF's location name the file alone, GitLab's
begins at 1, the line given in their text. A plain log's places are unchanged. The log is
fixtures/logs/real/sglang-4289-nccl-init.log (its source in the README): its root at line 1,
the parent's SIGQUIT at line 15."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppaux.report import Finding, Location, Severity
from ppaux.triage.decompressed import decompressed_places
from ppaux.triage.logreading import LogReading
from ppaux_cli.app import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
LOG = REAL / "sglang-4289-nccl-init.log"
PACKERS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


def _run(path: Path, form: str) -> str:
    result = CliRunner().invoke(app, ["triage", "--format", form, str(path)])
    assert result.exit_code == 1, result.output
    return " ".join(result.output.split()) if form == "text" else result.output


@pytest.fixture(params=sorted(PACKERS))
def packed(request, tmp_path) -> Path:
    path = tmp_path / f"run.log.{request.param}"
    path.write_bytes(PACKERS[request.param](LOG.read_bytes()))
    return path


def test_text_and_json_say_the_decompressed_line(packed):
    text = _run(packed, "text")
    assert f"at: {packed} (decompressed):1 in NCCL_CHECK" in text
    assert f"at: {packed} (decompressed):15" in text
    assert f"{packed}:1" not in text and f"{packed}:15" not in text
    findings = json.loads(_run(packed, "json"))["findings"]
    located = [f for f in findings if "location" in f]
    assert located and all(f["location"]["decompressed"] is True for f in located)
    assert all(f"{packed}:" not in f["message"] for f in findings)


def test_annotations_point_at_the_file_alone(packed):
    github = [ln for ln in _run(packed, "github").splitlines() if ln.startswith("::")]
    assert github and not any(",line=" in ln for ln in github)
    assert any(f"at: {packed} (decompressed):15" in ln for ln in github)
    sarif = json.loads(_run(packed, "sarif"))
    results = sarif["runs"][0]["results"]
    places = [loc for r in results for loc in r["locations"]]
    assert places and not any("region" in p["physicalLocation"] for p in places)
    assert any(
        p.get("message", {}).get("text") == "line 15 of the decompressed text" for p in places
    )
    gitlab = json.loads(_run(packed, "gitlab"))
    assert all(i["location"]["lines"]["begin"] == 1 for i in gitlab)
    assert any(f"{packed} (decompressed):15" in i["content"]["body"] for i in gitlab)


def test_a_plain_log_keeps_its_lines(tmp_path):
    path = tmp_path / "run.log"
    shutil.copyfile(LOG, path)
    assert f"at: {path}:15" in _run(path, "text") and "decompressed" not in _run(path, "text")
    github = _run(path, "github")
    assert f"file={path},line=15," in github


@given(st.text(max_size=60), st.integers(min_value=1, max_value=10**6))
def test_only_a_compressed_log_s_places_change(words, line):
    packed, plain = LogReading("a.log.gz"), LogReading("a.log")
    packed.compression = "gzip"
    message = f"{words} (a.log.gz:{line}) a.log:{line}"
    found = [
        Finding("PP802", Severity.ERROR, message, "a.log.gz", location=Location("a.log.gz", line))
    ]
    (marked,) = decompressed_places(found, [packed, plain])
    assert f"(a.log.gz (decompressed):{line})" in marked.message
    assert marked.message.endswith(f" a.log:{line}")
    assert marked.location is not None and marked.location.decompressed
    assert decompressed_places(found, [plain]) == found
