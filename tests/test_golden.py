"""Golden files: an update writes the new text and fails the run, so that it is reviewed."""

from __future__ import annotations

import helpers
import pytest


def test_an_update_writes_the_golden_and_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(helpers, "UPDATE_GOLDEN", True)
    path = tmp_path / "report.txt"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception, match=r"^golden report\.txt rewritten: review"):
        helpers.check_golden(path, "new\n")
    assert path.read_text(encoding="utf-8") == "new\n"
    helpers.check_golden(path, "new\n")  # the same text again: nothing to review, it passes


def test_an_update_writes_a_missing_golden_and_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(helpers, "UPDATE_GOLDEN", True)
    path = tmp_path / "golden" / "new.json"
    with pytest.raises(pytest.fail.Exception, match="rewritten"):
        helpers.check_golden(path, "{}\n")
    assert path.read_text(encoding="utf-8") == "{}\n"


def test_without_the_update_a_difference_fails_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(helpers, "UPDATE_GOLDEN", False)
    path = tmp_path / "report.txt"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=r"golden report\.txt differs"):
        helpers.check_golden(path, "new\n")
    assert path.read_text(encoding="utf-8") == "old\n"
    with pytest.raises(AssertionError, match="missing golden"):
        helpers.check_golden(tmp_path / "absent.txt", "x")
