"""A path in an error line is unambiguous: one that is not a plain word (a space, a quote, a
colon and a space) is written in single quotes as a shell reads them, in every command's
``-o`` error and in the lines of inputs that could not be read. Expected lines written by hand."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.errors import PathError, path_shown
from tests.helpers import REPO, cli

_DUMP = str(REPO / "fixtures" / "dumps" / "aux_list.pt")
_LOG = str(REPO / "fixtures" / "logs" / "sglang-aux-list.log")
#: Every command that writes its report or result with ``-o``, with the arguments it needs.
_COMMANDS = {
    "inspect": ["inspect", _DUMP],
    "replay": ["replay", _DUMP],
    "diff": ["diff", _DUMP, _DUMP],
    "explain": ["explain", "PP101"],
    "rules": ["rules"],
    "tensorize": ["tensorize", _DUMP],
    "triage": ["triage", _LOG],
    "check-skew": ["check-skew", str(REPO / "fixtures" / "skew" / "fingerprints" / "consistent")],
    "fingerprint": ["fingerprint", "--pp-rank", "0", "--pp-size", "2"],
    "check-observer": ["check-observer", "observer.py:Observer"],
    "capture list": ["capture", "list", "--dir", "."],
    "capture status": ["capture", "status", "--dir", "."],
}


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_every_commands_output_error_quotes_a_path_with_a_space(tmp_path, command):
    output = tmp_path / "sp ace" / "x.json"
    result = cli(*_COMMANDS[command], "-o", str(output))
    assert result.exit_code == 2, result.output
    assert result.stderr == f"ppaux: error: --output '{output}': its folder does not exist\n"
    assert not output.parent.exists()


def test_an_output_that_is_the_input_names_both_quoted(tmp_path):
    log = tmp_path / "it's a log.log"
    log.write_bytes(Path(_LOG).read_bytes())
    result = cli("triage", str(log), "-o", str(log))
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"ppaux: error: --output '{tmp_path}/it'\"'\"'s a log.log': is the input;"
    )
    assert log.read_bytes() == Path(_LOG).read_bytes()


def test_an_input_that_cannot_be_read_is_named_quoted(tmp_path):
    missing = tmp_path / "no such.log"
    result = cli("triage", str(missing), _LOG)
    assert f"ppaux: error: '{missing}': no such file" in result.stderr
    plain = cli("triage", str(tmp_path / "missing.log"), _LOG)
    assert f"ppaux: error: {tmp_path}/missing.log: no such file" in plain.stderr


def test_a_plain_path_and_a_streams_name_stay_as_they_are():
    for path in ("a/b.pt", "../x-1_2.json", "/tmp/données/x.pt", "-", "<stdin>", "C:x", "~/a"):
        assert path_shown(path) == path
    assert path_shown("a: b") == "'a: b'"
    assert path_shown("") == "''"
    assert str(PathError("sp ace.pt", "no such file")) == "'sp ace.pt': no such file"


@given(st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=30))
def test_a_shell_reads_any_shown_path_back_as_one_word(path):
    shown = path_shown(path)
    if path.isprintable():
        assert shlex.split(shown) == [path] or (shown == path and shlex.split(path) == [path])
        assert shown == path or (shown[0] == "'" and shown[-1] == "'")
    else:  # bash's $'...': one line, printable, and bash reads it back as the path
        assert shown.startswith("$'") and shown.isprintable()
        assert _bash_reads(shown) == os.fsencode(path)


@settings(max_examples=30)
@given(st.binary(min_size=1, max_size=20).filter(lambda b: b"\x00" not in b and b"/" not in b))
def test_a_name_that_is_not_utf_8_pastes_back_as_its_bytes(name):
    path = os.fsdecode(name)
    shown = path_shown(path)
    assert shown.isprintable()
    assert _bash_reads(shown) == name


def test_a_newline_in_a_path_is_shown_as_bash_reads_it():
    assert path_shown("in/q/bad\nname: it's.log") == "$'in/q/bad\\nname: it\\'s.log'"


@pytest.mark.parametrize("command", ["inspect", "diff"])
def test_inspect_and_diff_name_a_path_with_a_newline_as_bash_reads_it(tmp_path, command):
    odd = tmp_path / "new\nline.pt"
    odd.write_bytes(b"x")
    result = cli(command, *[str(odd)] * (2 if command == "diff" else 1))
    assert result.exit_code == 2
    line = (
        f"ppaux: error: $'{tmp_path}/new\\nline.pt': not a torch.save zip or a pickle file "
        "(malformed pickle at byte 0: unknown opcode b'x'); it is text: if it is a server log, "
        f"triage reads it (ppaux triage $'{tmp_path}/new\\nline.pt')"
    )
    assert set(result.stderr.splitlines()) == {line}


def _bash_reads(word: str) -> bytes:
    return subprocess.run(
        ["bash", "-c", f"printf %s {word}"], capture_output=True, check=True
    ).stdout
