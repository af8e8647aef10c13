"""Every command that writes notes says the same notes in its JSON report as in its text report.

The text format prints the notes after the findings and tables, one line each at a width wide
enough that none is wrapped; the JSON report lists them under ``notes``, in the same order.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import REPO, cli

from ppaux.report.formats import Format, render

WIDE = {"COLUMNS": "1000"}
CAPTURE = REPO / "fixtures/walkthrough/capture-20261202T102324Z-vm-25991-0001-pop.pt"
SKEWED = sorted(str(p) for p in (REPO / "fixtures/skew/fingerprints/skewed").glob("*.json"))


def _command(name: str, tmp_path: Path) -> list[str]:
    """The arguments of one run of ``name`` whose report has notes."""
    if name == "inspect":
        return ["inspect", str(CAPTURE)]
    if name == "check-skew":
        return ["check-skew", *SKEWED]
    if name == "triage":
        return ["triage", str(REPO / "fixtures/logs/sglang-aux-list.log")]
    shutil.copy(CAPTURE, tmp_path / "rank0.pt")
    return ["capture", "list", "--dir", str(tmp_path)]


def _notes_in_text(text: str, notes: list[str]) -> list[str]:
    """The run of lines of ``text`` that begins with the first note, as long as ``notes``."""
    lines = text.splitlines()
    assert notes[0] in lines, text
    start = lines.index(notes[0])
    return lines[start : start + len(notes)]


@pytest.mark.parametrize("name", ["inspect", "check-skew", "triage", "capture list"])
def test_json_and_text_hold_the_same_notes(name, tmp_path):
    args = _command(name, tmp_path)
    as_json = cli(*args, "--format", "json", env=WIDE)
    as_text = cli(*args, "--format", "text", env=WIDE)
    assert as_json.exit_code == as_text.exit_code, (as_json.output, as_text.output)
    notes = json.loads(as_json.stdout)["notes"]
    assert notes and all(isinstance(note, str) and note for note in notes)
    assert _notes_in_text(as_text.stdout, notes) == notes


@pytest.mark.torch
def test_check_observer_json_and_text_hold_the_same_notes(tmp_path):
    from ppaux.observer import ObserverOptions, check_observer

    # The worked example, printing a line as it is imported.
    example = (REPO / "fixtures/observers/entropy_good.py").read_text(encoding="utf-8")
    path = tmp_path / "printing.py"
    path.write_text(example + '\nprint("the target says hello")\n', encoding="utf-8")
    report = check_observer(f"{path}:EntropyObserver", ObserverOptions(batch_sizes=(2,), steps=1))
    notes = json.loads(render(report, Format.JSON))["notes"]
    assert any("the target says hello" in note for note in notes), notes
    text = render(report, Format.TEXT, width=1000)
    # What the target printed is one note in JSON, its heading and its lines in the text, each
    # line on its own, two spaces in.
    [printed] = [note for note in notes if note.startswith("the target printed:\n")]
    assert printed == "the target printed:\nthe target says hello\n"
    lines = [
        row
        for note in notes
        for row in (
            ["the target printed:", "  the target says hello"] if note == printed else [note]
        )
    ]
    assert _notes_in_text(text, lines) == lines
