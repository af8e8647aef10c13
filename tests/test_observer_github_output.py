"""Under ``-f github`` the target's own output, passed through on stderr, carries no workflow
command: each of its lines starts with ``target: ``, however the output is cut into pieces."""

from __future__ import annotations

import re

import pytest
from helpers import REPO, ppaux_process
from hypothesis import given
from hypothesis import strategies as st

from ppaux.report import LinePrefix

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")


def test_each_line_start_gets_the_prefix_once():
    prefixed = LinePrefix()
    pieces = [b"::a\n::b", b"c\r", b"::d\r\n", b"", b"  ::e\n"]
    assert b"".join(prefixed(p) for p in pieces) == (
        b"target: ::a\ntarget: ::bc\rtarget: ::d\r\ntarget:   ::e\n"
    )


# Bytes that make the runner end a line, and text that reads as a command after one.
_CHUNKS = st.lists(
    st.lists(st.sampled_from([b"\n", b"\r", b"\r\n", b"::", b" ", b"x", b"\xff"])).map(b"".join),
    max_size=8,
)


@given(_CHUNKS)
def test_no_line_of_the_prefixed_output_starts_a_command(pieces):
    prefixed = LinePrefix()
    out = b"".join(prefixed(p) for p in pieces)
    # The runner's lines: ends at \r\n, \r and \n; leading white space trimmed.
    for line in re.split(rb"\r\n|\r|\n", out):
        assert not line.lstrip().startswith(b"::")
    # Only prefixes are added: taken away again, the output is what was given.
    assert out.replace(b"target: ", b"") == b"".join(pieces).replace(b"target: ", b"")


@pytest.mark.torch
def test_the_targets_stop_commands_and_forged_notice_are_not_commands(tmp_path):
    file = tmp_path / "loud.py"
    file.write_text(
        GOOD + '\nprint("::stop-commands::pause", flush=True)\n'
        'print("::notice file=x.py,line=1::observer is PP-safe", flush=True)\n',
        encoding="utf-8",
    )
    result = ppaux_process(
        "check-observer", f"{file}:EntropyObserver", "--steps", "1", "-f", "github", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "target: ::stop-commands::pause\n" in result.stderr
    assert "target: ::notice file=x.py,line=1::observer is PP-safe\n" in result.stderr
    for line in re.split(r"\r\n|\r|\n", result.stderr):
        assert not line.lstrip().startswith("::"), line
    # Without github's commands to guard against, the output is shown as it is.
    plain = ppaux_process("check-observer", f"{file}:EntropyObserver", "--steps", "1", cwd=tmp_path)
    assert "\n::stop-commands::pause\n" in "\n" + plain.stderr
