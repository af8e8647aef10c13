"""The malicious fixtures are real (they do run code when unpickled) and inspect never runs them."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

from helpers import REPO

MALICIOUS = sorted(glob.glob(str(REPO / "fixtures" / "malicious" / "*")))


def marker(path: str) -> Path:
    return Path("/tmp") / f"ppaux_pwned_{Path(path).stem}"


def test_the_marker_mechanism_is_live(tmp_path):
    # Control: plain pickle really runs the payload, so an absent marker below means something.
    path = str(REPO / "fixtures" / "malicious" / "plain_pickle_os_system.pkl")
    target = marker(path)
    target.unlink(missing_ok=True)
    code = f"import pickle; pickle.load(open({path!r}, 'rb'))"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True)
    try:
        assert target.exists()
    finally:
        target.unlink(missing_ok=True)


def test_inspect_runs_no_payload():
    for path in MALICIOUS:
        marker(path).unlink(missing_ok=True)
    before = {p: Path(p).read_bytes() for p in MALICIOUS}
    result = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "inspect", *MALICIOUS, "--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 1, result.stderr
    assert [p for p in MALICIOUS if marker(p).exists()] == []
    assert {p: Path(p).read_bytes() for p in MALICIOUS} == before
