"""``check-observer -o`` writes where the system resolves the path: a link in its folder is
followed before a ``..`` after it, as ``echo > lnk/../x`` writes, and a folder that is not
there is not stepped over."""

from __future__ import annotations

import json

import pytest
from helpers import REPO, cli

GOOD = f"{REPO / 'fixtures' / 'observers' / 'entropy_good.py'}:EntropyObserver"


def test_a_link_then_dotdot_lands_where_the_system_resolves_it(tmp_path, monkeypatch):
    (tmp_path / "other" / "deep").mkdir(parents=True)
    (tmp_path / "lnk").symlink_to("other/deep")
    monkeypatch.chdir(tmp_path)
    args = ("check-observer", GOOD, "--steps", "1", "--batch-size", "1")
    result = cli(*args, "-o", "lnk/../rep.txt")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "other" / "rep.txt").is_file()
    assert not (tmp_path / "rep.txt").exists()
    # A folder that is not there is not stepped over by the '..' after it.
    missing = cli(*args, "-o", "nodir/../rep2.txt")
    assert missing.exit_code == 2
    assert not (tmp_path / "rep2.txt").exists()
    assert len(missing.stderr.strip().splitlines()) == 1


GOOD_TEXT = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")
ARGS = ("--steps", "1", "--batch-size", "1", "-f", "json")


def _target(tmp_path, head: str) -> str:
    """The good observer with ``head`` run at its import (after ``import torch``)."""
    text = GOOD_TEXT.replace("import torch\n", "import os\nimport torch\n" + head, 1)
    (tmp_path / "obs.py").write_text(text, encoding="utf-8")
    return f"{tmp_path / 'obs.py'}:EntropyObserver"


def _forge(out, how: str) -> str:
    """Code that puts a forged report at ``out``: written in place, or a new file renamed over."""
    if how == "in place":
        return f"open({str(out)!r}, 'w').write('FORGED')\n"
    return (
        f"open({str(out) + '.new'!r}, 'w').write('FORGED')\n"
        f"os.replace({str(out) + '.new'!r}, {str(out)!r})\n"
    )


@pytest.mark.parametrize("how", ["in place", "renamed over"])
@pytest.mark.parametrize("before", [None, "the user's\n"])
def test_a_report_the_target_forges_at_the_output_never_stays(tmp_path, how, before):
    out = tmp_path / "report.json"
    if before is not None:
        out.write_text(before, encoding="utf-8")
        out.chmod(0o600)
    result = cli("check-observer", _target(tmp_path, _forge(out, how)), *ARGS, "-o", str(out))
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code == 2:  # not written: -o is as it was before the target ran
        assert "changed while the target ran" in result.stderr
        if before is None:
            assert not out.exists()
        else:
            assert out.read_text(encoding="utf-8") == before
            assert out.stat().st_mode & 0o777 == 0o600
    else:  # written over: the report is ppaux's own
        assert json.loads(out.read_text(encoding="utf-8"))["tool"]["name"] == "ppaux"


@pytest.mark.parametrize("before", [None, "the user's\n"])
def test_a_target_that_forges_the_report_then_fails_to_load_leaves_no_forgery(tmp_path, before):
    out = tmp_path / "report.json"
    if before is not None:
        out.write_text(before, encoding="utf-8")
    forged = _forge(out, "in place") + "raise RuntimeError('no observer here')\n"
    result = cli("check-observer", _target(tmp_path, forged), *ARGS, "-o", str(out))
    assert result.exit_code == 2
    assert "no observer here" in result.stderr
    if before is None:
        assert not out.exists()
    else:
        assert out.read_text(encoding="utf-8") == before


def test_a_link_the_target_puts_at_the_output_is_removed_and_its_file_kept(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    out = tmp_path / "report.json"
    link = f"os.symlink({str(victim)!r}, {str(out)!r})\n"
    result = cli("check-observer", _target(tmp_path, link), *ARGS, "-o", str(out))
    assert result.exit_code == 2
    assert not out.exists() and not out.is_symlink()
    assert victim.read_text(encoding="utf-8") == "keep me\n"


@pytest.mark.parametrize("before", [None, "the user's\n"])
def test_a_folder_the_target_puts_at_the_output_is_removed_and_the_file_put_back(tmp_path, before):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "kept.txt").write_text("keep me\n", encoding="utf-8")
    out = tmp_path / "report.json"
    if before is not None:
        out.write_text(before, encoding="utf-8")
    folder = (
        f"os.replace({str(out)!r}, {str(out) + '.old'!r}) if os.path.exists({str(out)!r}) else 0\n"
        f"os.makedirs({str(out / 'inner')!r})\n"
        f"open({str(out / 'inner' / 'f')!r}, 'w').write('FORGED')\n"
        f"os.symlink({str(victim)!r}, {str(out / 'inner' / 'to_victim')!r})\n"
    )
    result = cli("check-observer", _target(tmp_path, folder), *ARGS, "-o", str(out))
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1
    if before is None:
        assert not out.exists() and not out.is_symlink()
    else:
        assert out.is_file() and out.read_text(encoding="utf-8") == before
    assert (victim / "kept.txt").read_text(encoding="utf-8") == "keep me\n"
