"""PP802's fix is the one of the kind the finding names, the same in every format."""

from __future__ import annotations

import json

import pytest
from helpers import REPO, cli

from ppaux.report import RULES

REAL = REPO / "fixtures" / "logs" / "real"


def _root(log: str, fmt: str) -> str:
    done = cli("triage", str(REAL / log), "-f", fmt, env={"COLUMNS": "1000"})
    assert done.exit_code == 1, done.output
    return done.stdout


@pytest.mark.parametrize(
    ("log", "kind", "says", "not_said"),
    [
        ("sglang-4547-oom-overlap.log", "memory", "--mem-fraction-static", "NCCL_DEBUG"),
        ("sglang-18366-pp-multinode-keyerror.log", "other", "check-skew", "--mem-fraction"),
    ],
)
def test_a_root_of_one_kind_gets_that_kind_s_fix(log, kind, says, not_said):
    (root,) = [f for f in json.loads(_root(log, "json"))["findings"] if f["code"] == "PP802"]
    assert root["extra"]["kind"] == kind
    assert says in root["hint"] and not_said not in root["hint"]
    assert "for communication" not in root["hint"]
    # The text and Markdown reports show the same fix, word for word.
    text = " ".join(_root(log, "text").split())
    assert f"fix: {root['hint']}" in text
    assert root["hint"] in _root(log, "markdown")


def test_every_kind_triage_names_has_a_fix_of_its_own():
    from ppaux.triage.causeabove import ABOVE_CAUSES
    from ppaux.triage.kinds import AUX, KINDS
    from ppaux.triage.ncclsetup import SETUP_FAILURES

    # Beside the kinds, each way NCCL's set-up fails has its fix (a root cut below NCCL's
    # warning of it, extra.nccl_setup), as PP809's for the warning alone; and so has each
    # cause a line just above a cut traceback names.
    # An MPI call's error has MPI's fix, whatever its kind (extra.collectives 'mpi').
    named = {*SETUP_FAILURES, *ABOVE_CAUSES, "mpi"}
    assert {k for k, _ in RULES["PP802"].kind_fixes} >= named
    kinds = [kind for kind, _ in RULES["PP802"].kind_fixes if kind not in named]
    # An auxiliary-output root is PP801's, whose fix is its rule's.
    assert sorted(kinds) == sorted(set(KINDS) - {AUX})
    assert len(KINDS) == 13
    assert all(text and text != RULES["PP802"].fix for _, text in RULES["PP802"].kind_fixes)
    setups = dict(RULES["PP809"].kind_fixes)
    # and PP809 has its own fix where the log says who stopped the job from outside
    assert {"outside-stop", "slurm-cancel"} <= set(setups)
    setups = {name: text for name, text in setups.items() if name in SETUP_FAILURES}
    assert sorted(setups) == sorted(SETUP_FAILURES)
    assert all(text != RULES["PP809"].fix for text in setups.values())
    assert all(dict(RULES["PP802"].kind_fixes)[name] == setups[name] for name in setups)
