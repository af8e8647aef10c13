"""NCCL's warning that it goes on without InfiniBand's library (``Failed to open
libibverbs.so[.1]``: it then uses its sockets) is no failure, beside sglang's lines or in a log
of NCCL's lines alone: no PP809, no steps, exit 0. Another warning in the same log still is.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest
from typer.testing import CliRunner

from ppaux.triage import triage_paths
from ppaux_cli.app import app

#: NCCL's lines of a public report's start-up (its host anonymised), no failure in them.
NCCL_ONLY = (
    "Rank 0:\n"
    "host-a:14605:14605 [0] NCCL INFO Bootstrap : Using ens5:10.0.0.1<0>\n"
    "host-a:14605:14605 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using "
    "internal implementation\n"
    "host-a:14605:14673 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
    "host-a:14605:14673 [0] NCCL INFO NET/Socket : Using [0]ens5:10.0.0.1<0>\n"
    "host-a:14605:14673 [0] NCCL INFO Using network Socket\n"
)


def _report(text: str):
    return triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})


@pytest.mark.parametrize("suffix", ["libibverbs.so[.1]", "libibverbs.so.1", "libibverbs.so"])
def test_the_missing_verbs_library_alone_is_no_failure(suffix):
    log = NCCL_ONLY.replace("libibverbs.so[.1]", suffix)
    report = _report(log)
    assert [f.code for f in report.findings if f.code.startswith("PP80")] == []
    assert report.data["steps"] == []
    assert not report.problems


def test_another_warning_beside_it_still_says_no_root():
    log = NCCL_ONLY + (
        "host-a:14605:14673 [0] transport/net_socket.cc:540 NCCL WARN NET/Socket : peer "
        "10.0.0.2<48921> shut down while reading data\n"
    )
    codes = [f.code for f in _report(log).findings]
    assert "PP809" in codes, codes


def test_the_command_line_exits_0(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(NCCL_ONLY, encoding="utf-8")
    result = CliRunner().invoke(app, ["triage", str(path)])
    assert result.exit_code == 0, result.output
    assert "not an sglang log" not in result.output
