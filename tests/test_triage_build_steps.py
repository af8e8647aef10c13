"""A library that does not load for a symbol it needs (``ImportError: .../common_ops.abi3.so:
undefined symbol: cuGreenCtxStreamCreate``) is a build made for another torch, CUDA or driver
than those installed: its steps name the package whose build to check and what to check it
against (torch's release and CUDA, the driver), never the stages to compare. Logs of another
program than sglang get no sglang step (no stage comparison). Expectations by hand."""

from __future__ import annotations

import shlex
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.buildsteps import build_steps

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
IMPORT = (
    "Traceback (most recent call last):\n"
    '  File "/srv/run.py", line 6, in <module>\n'
    "    import ext\n"
    "ImportError: /usr/lib/python3.10/site-packages/flash_ext/_C.so: undefined symbol: {symbol}\n"
)


def _steps(log: Path) -> list[dict]:
    return triage_paths([str(log)]).data["steps"]


def _text(steps: list[dict]) -> str:
    return "\n".join(f"{s['comment']} {' '.join(s['argv'] or [])}" for s in steps)


def test_the_real_log_s_steps_name_the_driver_and_the_package() -> None:
    steps = _steps(REAL / "sglang-8131-import-undefined-symbol.log")
    text = _text(steps)
    assert "cuGreenCtxStreamCreate" in text
    assert "CUDA's driver API" in text
    assert ["python3", "-m", "pip", "show", "--", "sgl_kernel"] in [s["argv"] for s in steps]
    assert ["nvidia-smi"] in [s["argv"] for s in steps]
    assert "check-skew" not in text and "fingerprint" not in text


def test_a_torch_symbol_names_torch_s_release(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(IMPORT.format(symbol="_ZN3c1017RegisterOperatorsD1Ev"))
    text = _text(_steps(log))
    assert "another torch release" in text
    assert "flash_ext" in text


def test_another_import_error_gets_no_build_step(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(IMPORT.replace(": undefined symbol: {symbol}", " is not there"))
    assert "compiled extension" not in _text(_steps(log))


def test_a_training_job_s_failure_gets_no_stage_comparison(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        'Traceback (most recent call last):\n  File "/srv/train.py", line 3, in <module>\n'
        "    load()\nValueError: bad tokenizer file\n"
    )
    text = _text(_steps(log))
    assert "read the root's exception" in text
    assert "pipeline stage" not in text and "check-skew" not in text


def test_an_sglang_failure_without_stages_may_still_compare_them(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-06-17 06:48:30 TP0] Scheduler hit an exception: Traceback (most recent call "
        'last):\n  File "/srv/sglang/srt/managers/scheduler.py", line 3, in run\n    go()\n'
        "ValueError: bad weight\n"
    )
    assert "no pipeline stage" in _text(_steps(log))


@settings(max_examples=30, deadline=None)
@given(st.text(min_size=1, max_size=60), st.text(min_size=1, max_size=60))
def test_every_build_step_round_trips_and_no_operand_is_an_option(package, symbol) -> None:
    library = f"/usr/lib/site-packages/{package}/_C.so"
    for step in build_steps(library, symbol):
        if step.argv is None:
            continue
        assert shlex.split(shlex.join(step.argv)) == list(step.argv)
        if step.argv[:4] == ("python3", "-m", "pip", "show"):
            assert step.argv[4] == "--"
            assert not step.argv[5].startswith("-")
