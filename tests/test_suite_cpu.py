"""The suite's CPU log (``PPAUX_TEST_CPU_LOG``, tests/conftest.py) and the script that sums it
per module (scripts/suite_cpu.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CPU_LOG_ENV
from helpers import REPO

#: Set only by :func:`test_each_test_appends_its_cpu_time_with_its_childrens`'s inner run.
BURN_ENV = "PPAUX_TEST_CPU_BURN"
BURN_S = 0.4


def _script():
    spec = importlib.util.spec_from_file_location("suite_cpu", REPO / "scripts" / "suite_cpu.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_child_burns_cpu():
    """Skipped but in :func:`test_each_test_appends_its_cpu_time_with_its_childrens`'s run:
    a child process that spends :data:`BURN_S` of CPU, and this process as much again."""
    if os.environ.get(BURN_ENV) != "1":
        pytest.skip(f"the subject of another test's run ({BURN_ENV}=1)")
    burn = f"import time\nend = time.process_time() + {BURN_S}\n"
    burn += "while time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)
    end = time.process_time() + BURN_S
    while time.process_time() < end:
        pass


def test_each_test_appends_its_cpu_time_with_its_childrens(tmp_path: Path):
    log = tmp_path / "cpu.tsv"
    log.write_text("1.000\ttests/test_earlier.py::test_kept\n", encoding="utf-8")
    this = f"tests/{Path(__file__).name}"
    nodes = [f"{this}::test_a_child_burns_cpu", f"{this}::test_the_table_sums_each_module"]
    env = {**os.environ, CPU_LOG_ENV: str(log), BURN_ENV: "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", *nodes],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line.split("\t") for line in log.read_text(encoding="utf-8").splitlines()]
    assert [nodeid for _, nodeid in lines] == ["tests/test_earlier.py::test_kept", *nodes]
    burnt, summed = float(lines[1][0]), float(lines[2][0])
    assert 2 * BURN_S <= burnt < 2 * BURN_S + 5  # its own and its child's, not the run's start
    assert 0 <= summed < BURN_S


def test_the_table_sums_each_module(tmp_path: Path):
    log = tmp_path / "cpu.tsv"
    log.write_text(
        "2.500\ttests/test_b.py::test_one[x]\n"
        "0.500\ttests/test_a.py::test_one\n"
        "1.000\ttests/test_b.py::test_one[y]\n"
        "4.000\ttests/test_c.py::test_two\n"
        "1.500\ttests/test_a.py::test_one\n",  # a case of the same id: summed
        encoding="utf-8",
    )
    script = _script()
    spent = script.read_log(log)
    assert script.per_module(spent) == [
        ("tests/test_c.py", 1, 4.0),
        ("tests/test_b.py", 2, 3.5),
        ("tests/test_a.py", 1, 2.0),
    ]
    assert script.table(spent, top=1, tests=2).splitlines() == [
        "| module | tests | CPU s | share |",
        "|---|---:|---:|---:|",
        "| test_c.py | 1 | 4.0 | 42.1 % |",
        "| 2 other modules | 3 | 5.5 | 57.9 % |",
        "| all | 4 | 9.5 | 100 % |",
        "",
        "| test | CPU s |",
        "|---|---:|",
        "| `tests/test_c.py::test_two` | 4.0 |",
        "| `tests/test_b.py::test_one[x]` | 2.5 |",
    ]
