"""``check-observer -o`` writes where the system resolves the path: a link in its folder is
followed before a ``..`` after it, as ``echo > lnk/../x`` writes, and a folder that is not
there is not stepped over."""

from __future__ import annotations

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
