"""``check-observer``'s own process imports every module it needs to judge the run and write
the report, in any format, before the target runs: a target that rewrites ppaux's own files (an
editable install, a virtual environment the user can write) changes nothing in the verdict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO
from observer_targets import MAX_OBSERVER

pytestmark = pytest.mark.torch

import torch  # noqa: E402,F401  (the check needs torch)

#: An observer whose rank 0 negates the value (a real PP712), and which, at import, appends to
#: the report's JSON writer of the ppaux it is given a line that prints a clean document and
#: ends the process: the forgery that ran where the writer was imported after the target.
FORGER = (
    """
import os
import torch

path = os.environ.get("JUDGE_COPY")
if path:
    with open(os.path.join(path, "ppaux", "report", "formats", "json.py"), "a") as f:
        f.write("\\nimport os as _o\\n"
                "_o.write(1, b'{\\"schema\\": \\"ppaux.report/1\\", \\"findings\\": []}\\\\n')\\n"
                "_o._exit(0)\\n")


class Host:
    def __init__(self, v):
        self.v = v

    def consume(self, batch, commits):
        for req, c, x in zip(batch.reqs, commits, self.v.tolist()):
            if c is not None:
                req.customized_info = {"v": x}


class Out:
    def __init__(self, v):
        self.v = v

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.v))

    def to_pp_tensors(self):
        return {"v": self.v}


def rebuild(tensors):
    return Out(-tensors["v"])
"""
    + MAX_OBSERVER
)


def _copy_of_ppaux(tmp_path: Path) -> Path:
    """ppaux and its CLI copied, for a target to write (never this checkout's files)."""
    copy = tmp_path / "site"
    for package in ("ppaux", "ppaux_cli"):
        shutil.copytree(
            REPO / package, copy / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return copy


def _run(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-B", *args],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_target_rewriting_the_report_writer_does_not_forge_the_verdict(tmp_path):
    copy = _copy_of_ppaux(tmp_path)
    observer = tmp_path / "forger.py"
    observer.write_text(FORGER, encoding="utf-8")
    result = _run(
        tmp_path,
        "-m",
        "ppaux_cli",
        "check-observer",
        f"{observer}:O",
        "-f",
        "json",
        "--timeout",
        "60",
        env={"PYTHONPATH": str(copy), "JUDGE_COPY": str(copy)},
    )
    # The target did write the copy the check ran from...
    assert "_o._exit(0)" in (copy / "ppaux/report/formats/json.py").read_text(encoding="utf-8")
    # ...and the report is still ppaux's own: the real difference, exit 1.
    assert result.returncode == 1, result.stdout + result.stderr
    codes = {finding["code"] for finding in json.loads(result.stdout)["findings"]}
    assert "PP712" in codes, result.stdout


#: Runs the CLI in this process, noting the modules loaded when the child has just started.
PROBE = """
import json, sys
import ppaux.observer.child as child

started = child._Run.__init__
seen = {}

def init(self, *args, **kwargs):
    started(self, *args, **kwargs)
    seen["before"] = sorted(sys.modules)

child._Run.__init__ = init
from ppaux_cli.app import main

sys.argv = ["ppaux", *sys.argv[1:]]
try:
    main()
finally:
    with open(sys.argv[-1] + ".modules", "w") as f:
        json.dump({"before": seen["before"], "after": sorted(sys.modules)}, f)
"""


def test_no_module_of_ppaux_is_first_imported_after_the_child_starts(tmp_path):
    observer = tmp_path / "forger.py"
    observer.write_text(FORGER, encoding="utf-8")
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    report = tmp_path / "report.json"
    result = _run(
        tmp_path,
        str(probe),
        "check-observer",
        f"{observer}:O",
        "--timeout",
        "60",
        "-o",
        str(report),
        env={"PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    modules = json.loads(Path(f"{report}.modules").read_text(encoding="utf-8"))
    before = set(modules["before"])
    late = sorted(
        name for name in set(modules["after"]) - before if name.split(".")[0].startswith("ppaux")
    )
    assert late == []
    # Every format's writer is loaded already, not only the one asked for.
    for fmt in ("json", "sarif", "junit", "gitlab", "github", "markdown", "html", "text"):
        assert f"ppaux.report.formats.{fmt}" in before
    assert "rich.console" in before
