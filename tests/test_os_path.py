"""An output path is where the system would open it: a link in its folder is followed before the
``..`` after it, as ``open`` does, never dropped by its text."""

from __future__ import annotations

import os
import sys

import pytest

from ppaux.files import os_path

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")


@pytest.fixture
def linked(tmp_path, monkeypatch):
    """``tmp_path`` as the working directory, with ``lnk`` a link to ``other/deep``."""
    (tmp_path / "other" / "deep").mkdir(parents=True)
    os.symlink("other/deep", tmp_path / "lnk")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def test_a_link_then_dot_dot_is_the_links_parent(linked):
    assert os_path("lnk/../rep.txt") == str(linked / "other" / "rep.txt")
    # The system agrees: a file written there is in other/.
    with open("lnk/../shell.txt", "w", encoding="utf-8") as out:
        out.write("x")
    assert (linked / "other" / "shell.txt").exists()
    assert not (linked / "shell.txt").exists()


def test_a_plain_path_is_made_absolute(linked):
    assert os_path("rep.txt") == str(linked / "rep.txt")
    assert os_path("other/./deep/rep.txt") == str(linked / "other" / "deep" / "rep.txt")


def test_the_last_name_is_kept_even_when_it_is_a_link(linked):
    assert os_path("lnk") == str(linked / "lnk")


def test_a_folder_that_is_not_there_is_left_for_the_write_to_refuse(linked):
    assert os_path("nodir/../rep.txt") == str(linked / "nodir" / ".." / "rep.txt")
