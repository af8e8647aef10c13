"""Rank 0's process is a fresh interpreter (:mod:`ppaux.observer.fresh`), as each of sglang's
schedulers is: its string hash seed is its own unless the user exported ``PYTHONHASHSEED``, and
then both processes have that one (:mod:`ppaux.observer.interpreter`). The suite's own hook
(``PPAUX_TEST_RANK0_FORK``, set by ``tests/conftest.py``) is removed here."""

from __future__ import annotations

import pytest
from helpers import REPO
from hypothesis import given
from hypothesis import strategies as st
from observer_targets import SET_ORDER_OUTPUT

from ppaux.observer import ObserverOptions, check_observer
from ppaux.observer.fresh import FORK_HOOK
from ppaux.observer.interpreter import LARGEST_HASH_SEED, started, valid_seed

pytestmark = pytest.mark.torch

GOOD = REPO / "fixtures" / "observers" / "entropy_good.py"
ONE = ObserverOptions(batch_sizes=(2,), steps=1)

# 40 names packed in a set's order: two independent seeds order them alike by chance almost
# never (the names spread over a table of 128 slots).
SET_ORDER = (
    """
import os
import torch

NAMES = {f"metric_{n}" for n in range(40)}
if os.environ.get("PYTHONPPAUXPROBE") != "kept":
    raise RuntimeError("the PYTHON* variables of the user are not in os.environ")


"""
    + SET_ORDER_OUTPUT
    + """


class Observer:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return {k: logits[:, 0].float() + n for n, k in enumerate(sorted(NAMES))}

    def after_sample(self, state, token_ids):
        return Out(state)

    def from_pp_tensors(self, tensors):
        return Out(dict(zip(NAMES, tensors["packed"].unbind(-1))))
"""
)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """The check as users run it (no test hook), the target written in ``tmp_path``."""
    monkeypatch.delenv(FORK_HOOK, raising=False)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    monkeypatch.setenv("PYTHONPPAUXPROBE", "kept")
    (tmp_path / "set_order.py").write_text(SET_ORDER, encoding="utf-8")
    return f"{tmp_path / 'set_order.py'}:Observer"


def test_columns_packed_in_a_set_order_are_read_back_under_other_names(fresh):
    found = check_observer(fresh, ONE).findings
    codes = {item.code for item in found}
    # What rank 0 rebuilt differs, and what its consume wrote from it.
    assert codes == {"PP711", "PP712"}
    rebuilt = [item.message for item in found if item.code == "PP711"]
    assert any(".values['metric_" in text and "rebuilt differs" in text for text in rebuilt)


def test_a_shared_hash_seed_is_given_to_both_processes(fresh, monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "1234")
    assert check_observer(fresh, ONE).findings == ()


def test_a_seed_python_reads_with_a_sign_and_blanks_is_given_to_both(fresh, monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", " +1234")  # python3 reads it as 1234
    assert check_observer(fresh, ONE).findings == ()


ARGV = """
import os
import sys


class Host:
    def consume(self, batch, commits):
        for req, commit in zip(batch.reqs, commits):
            if commit is not None:
                req.customized_info = {"argv0": os.path.basename(sys.argv[0])}


class Out:
    def __init__(self, values):
        self.values = values

    def copy_to_host(self, copy):
        return Host()

    def to_pp_tensors(self):
        return {"values": self.values}


class Observer:
    def is_active(self, info):
        return True

    def before_grammar(self, logits, info):
        return logits.float().amax(-1)

    def after_sample(self, state, token_ids):
        return Out(state.clone())

    def from_pp_tensors(self, tensors):
        return Out(tensors["values"])
"""


def test_rank_0_has_the_childs_argv_as_sglangs_schedulers_share_the_launchers(fresh, tmp_path):
    (tmp_path / "argv.py").write_text(ARGV, encoding="utf-8")
    assert check_observer(f"{tmp_path / 'argv.py'}:Observer", ONE).findings == ()


def test_the_suite_hook_forks_rank_0_with_the_childs_seed_and_says_so(fresh, monkeypatch):
    # What the hook gives up: the forked process shares the child's seed, so this passes; the
    # report says that rank 0 was forked, why, and how to check without the hook (one check
    # for both, each starting a child that imports torch).
    monkeypatch.setenv(FORK_HOOK, "1")
    report = check_observer(fresh, ONE)
    assert report.findings == ()
    (note,) = [n for n in report.notes if "forked" in n]
    assert f"as the test suite's hook {FORK_HOOK}=1 asked for a fork" in note
    assert "shares the check's child process's string hash seed" in note
    assert f"unset {FORK_HOOK}" in note


def test_a_correct_observer_passes_with_a_fresh_rank_0_and_no_fork_note(fresh):
    report = check_observer(f"{GOOD}:EntropyObserver", ONE)
    assert report.findings == ()
    assert not [n for n in report.notes if "forked" in n]


def test_a_fresh_rank_0_ending_is_a_finding(fresh, tmp_path):
    (tmp_path / "ending.py").write_text(
        GOOD.read_text(encoding="utf-8")
        + """

class Ending(EntropyObserver):
    def from_pp_tensors(self, tensors):
        import os

        os._exit(3)
""",
        encoding="utf-8",
    )
    (item,) = check_observer(f"{tmp_path / 'ending.py'}:Ending", ONE).findings
    assert item.code == "PP708"
    assert "rank 0's process ended (exit code 3)" in item.message


ENV = st.dictionaries(
    st.sampled_from(["PYTHONPATH", "PYTHONHASHSEED", "PYTHONWARNINGS", "HOME", "PYTHONX"]),
    st.one_of(st.sampled_from(["random", "0", "abc", "-1", str(LARGEST_HASH_SEED + 1)]), st.text()),
)


@given(ENV)
def test_an_interpreter_reads_no_python_variable_but_a_valid_seed(env):
    isolation, start, later = started(env)
    assert {**start, **later} == env
    if isolation == ["-I"]:
        assert later == {}
        assert "PYTHONHASHSEED" not in env or not valid_seed(env["PYTHONHASHSEED"])
    else:
        assert isolation == ["-s", "-P"]
        assert [k for k in start if k.startswith("PYTHON")] == ["PYTHONHASHSEED"]
        assert valid_seed(start["PYTHONHASHSEED"])


def test_the_seeds_python_accepts():
    assert valid_seed("random") and valid_seed("0") and valid_seed(str(LARGEST_HASH_SEED))
    assert not valid_seed(str(LARGEST_HASH_SEED + 1)) and not valid_seed("-1")
    assert not valid_seed(" ") and not valid_seed("٣")  # a digit, but not an ASCII one
