"""check-observer's report at ``-o`` is a file ppaux makes anew after the target ran: a mode the
target set on the path (``chmod 000``) does not stay, the mode is the umask's; a folder above
``-o`` the target removed or replaced ends in the report where the user said or one error line
and exit 2, never a traceback; and the unit that writes it (:func:`write_fresh`) keeps the null
device and a user's link as they are."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest
import torch  # noqa: F401  (the check runs torch)
from helpers import REPO, ppaux_process

from ppaux_cli.output_paths import write_fresh

pytestmark = pytest.mark.torch

GOOD = REPO / "fixtures" / "observers" / "entropy_good.py"


def _check(cwd, at_import: str, output: str):
    shutil.copy(GOOD, cwd / "entropy_good.py")
    (cwd / "hostile.py").write_text(
        f"import os, shutil\n{at_import}\nfrom entropy_good import EntropyObserver\n",
        encoding="utf-8",
    )
    return ppaux_process(
        "check-observer",
        "hostile.py:EntropyObserver",
        *("--steps", "1", "--batch-size", "1", "-f", "json", "-o", output),
        cwd=cwd,
    )


def test_a_mode_the_target_set_on_the_report_file_does_not_stay(tmp_path):
    report = tmp_path / "report.json"
    report.write_text("before", encoding="utf-8")
    report.chmod(0o640)
    done = _check(tmp_path, f"os.chmod({str(report)!r}, 0)", str(report))
    assert done.returncode == 0, done.stderr[-2000:]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(report.stat().st_mode) == 0o666 & ~umask
    assert json.loads(report.read_text(encoding="utf-8"))["findings"] == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize(
    "change",
    [
        "shutil.rmtree({out!r})",
        "shutil.rmtree({sub!r})",
        "os.rename({out!r}, {out!r} + '2'); os.makedirs({sub!r})",
        "shutil.rmtree({sub!r}); os.symlink({elsewhere!r}, {sub!r})",
    ],
    ids=["folder-removed", "parent-removed", "folder-replaced", "folder-linked"],
)
def test_a_folder_above_the_report_changed_by_the_target_is_one_line_or_the_report(
    tmp_path, change
):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    sub = out / "sub"
    sub.mkdir(parents=True)
    elsewhere.mkdir()
    at_import = change.format(out=str(out), sub=str(sub), elsewhere=str(elsewhere))
    done = _check(tmp_path, at_import, str(sub / "report.json"))
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert list(elsewhere.iterdir()) == []  # never written through the link
    if done.returncode == 2:
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ppaux: error: --output "), lines
        assert "the report was not written" in lines[0]
    else:
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads((sub / "report.json").read_text(encoding="utf-8"))["findings"] == []


def test_write_fresh_replaces_a_file_and_writes_through_the_null_device(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("old", encoding="utf-8")
    path.chmod(0)
    write_fresh(str(path), "new")
    assert path.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(path.stat().st_mode) != 0
    write_fresh(os.devnull, "x")  # never replaced
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    target = tmp_path / "target.txt"
    target.write_text("", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_fresh(str(link), "through")
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "through"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "r.txt", "target.txt"]
