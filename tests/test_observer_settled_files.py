"""The user's files that shape a check-observer report (the configuration, ``--config``, the git
working tree's top, ``$GITHUB_STEP_SUMMARY``) are read before the target's code runs: a target
that writes them changes neither the exit status nor where the report goes."""

from __future__ import annotations

import shutil

import pytest
import torch  # noqa: F401  (the check runs torch)
from helpers import REPO, ppaux_process

pytestmark = pytest.mark.torch

OBSERVERS = REPO / "fixtures" / "observers"

# A broken observer (to_pp_tensors sends a list: PP705, an error) whose import writes the files
# named in its environment, as a hostile or careless target could.
TARGET = """
import os
from entropy_list import EntropyObserver

def _write(path, text):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)

_write(os.path.join(os.getcwd(), "ppaux.toml"), 'fail-on = "never"\\nignore = ["PP7"]\\n')
_write(os.path.join(os.getcwd(), "pyproject.toml"), '[tool.ppaux]\\nfail-on = "never"\\n')
if os.environ.get("T_CONFIG"):
    _write(os.environ["T_CONFIG"], 'fail-on = "never"\\n')
if os.environ.get("T_GIT"):
    os.makedirs(os.environ["T_GIT"], exist_ok=True)
summary = os.environ.get("GITHUB_STEP_SUMMARY")
if summary and not os.path.islink(summary):
    os.replace(summary, summary + ".moved")
    os.symlink(os.environ["T_VICTIM"], summary)
"""


def _work(tmp_path):
    cwd = tmp_path / "top" / "cwd"
    cwd.mkdir(parents=True)
    for name in ("entropy_good.py", "entropy_list.py"):
        shutil.copy(OBSERVERS / name, cwd / name)
    (cwd / "hostile.py").write_text(TARGET, encoding="utf-8")
    return cwd


def _check(cwd, *args, env=None):
    return ppaux_process(
        "check-observer",
        "hostile.py:EntropyObserver",
        "--steps",
        "1",
        "--batch-size",
        "1",
        *args,
        cwd=cwd,
        env=env,
    )


def test_a_configuration_the_target_writes_does_not_change_the_exit_status(tmp_path):
    cwd = _work(tmp_path)
    result = _check(cwd)
    assert (cwd / "ppaux.toml").exists()  # the target did write it
    assert result.returncode == 1, result.stderr
    assert "PP705" in result.stdout


def test_the_named_config_top_and_step_summary_are_read_before_the_target_runs(tmp_path):
    cwd = _work(tmp_path)
    config = cwd / "mine.toml"
    config.write_text('fail-on = "error"\n', encoding="utf-8")
    summary = tmp_path / "summary.md"
    summary.write_text("before\n", encoding="utf-8")
    victim = tmp_path / "victim.md"
    victim.write_text("victim\n", encoding="utf-8")
    env = {
        "T_CONFIG": str(config),
        "T_GIT": str(tmp_path / "top" / ".git"),
        "GITHUB_STEP_SUMMARY": str(summary),
        "T_VICTIM": str(victim),
    }
    result = _check(cwd, "--config", str(config), "-f", "github", env=env)
    assert config.read_text(encoding="utf-8") == 'fail-on = "never"\n'  # rewritten
    assert (tmp_path / "top" / ".git").is_dir()  # planted
    assert result.returncode == 1, result.stderr
    # paths relative to the working directory (no git tree above it when the run began)
    assert "::error file=entropy_list.py," in result.stdout
    assert "cwd/" not in result.stdout
    assert victim.read_text(encoding="utf-8") == "victim\n"
    assert "the step summary was not appended" in result.stderr
