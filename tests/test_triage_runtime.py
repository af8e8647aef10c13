"""``ppaux triage`` on logs that sglang itself writes as its PP output path fails (runtime tier).

``fixtures/logs/sglang_log_driver.py`` runs the real ``SchedulerPPMixin`` methods of each release
in two processes over gloo, logging through sglang's own ``configure_logger`` and handling the
failure as ``run_scheduler_process`` does; triage then reads what they logged. Importing sglang
is most of a run's cost, so each release's scenarios are driven by one launcher (``--and``), once
per module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import sglang_runtime

from ppaux.triage import triage_paths

pytestmark = pytest.mark.sglang_runtime

DRIVER = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "sglang_log_driver.py"


#: The driver runs of each release: (scenario, options); ``{captures}`` is the run's capture
#: directory.
RUNS = {
    "0.5.19": [("aux-list", ["--log-ms"])],
    "0.5.23": [("aux-list", []), ("aux-list-strict", ["--capture", "{captures}"])],
}


@dataclass(frozen=True)
class Run:
    log: Path
    returncode: int
    captures: Path
    stderr: str


@pytest.fixture(scope="module")
def driven(tmp_path_factory) -> Callable[[str, str], Run]:
    """``driven(version, scenario)``: the run of ``scenario`` under ``version``, all of the
    release's :data:`RUNS` driven by one launcher the first time one of them is asked for."""
    done: dict[tuple[str, str], Run] = {}

    def drive(version: str) -> None:
        runtime = sglang_runtime.sglang_runtime(version)
        root = tmp_path_factory.mktemp(f"sglang-{version}")
        args = [str(DRIVER)]
        runs: dict[str, tuple[Path, Path]] = {}
        for scenario, options in RUNS[version]:
            log, captures = root / f"{scenario}.log", root / f"{scenario}-captures"
            captures.mkdir()
            runs[scenario] = (log, captures)
            if len(args) > 1:
                args.append("--and")
            args += [scenario, str(log), *(o.format(captures=captures) for o in options)]
        out = runtime.run(args, timeout=1800)
        codes = dict(line.split() for line in out.stdout.splitlines())
        assert sorted(codes) == sorted(runs), out.stderr[-3000:]
        for scenario, (log, captures) in runs.items():
            done[version, scenario] = Run(log, int(codes[scenario]), captures, out.stderr)

    def get(version: str, scenario: str) -> Run:
        if (version, scenario) not in done:
            drive(version)
        return done[version, scenario]

    return get


@pytest.mark.parametrize(("version", "log_ms"), [("0.5.19", True), ("0.5.23", False)])
def test_triage_names_the_first_stage_that_sglang_logged_failing(version, log_ms, driven):
    run = driven(version, "aux-list")
    log = run.log
    assert run.returncode == 1, run.stderr[-3000:]
    lines = log.read_text(encoding="utf-8").splitlines()
    start = next(i for i, text in enumerate(lines, 1) if "PP0] Scheduler hit an exception" in text)
    assert lines[start - 1].startswith("[20")
    if log_ms:  # SGLANG_LOG_MS: '[YYYY-mm-dd HH:MM:SS.mmm PP0]'
        assert lines[start - 1][20] == "."
    else:
        assert lines[start - 1][20] == " "

    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.key == "PP0"
    assert root.sglang_error == "received a non-tensor auxiliary PP output"
    assert root.location.to_json() == {
        "file": str(log),
        "line": start,
        "function": "pop_auxiliary_output_from_pp_tensors",
    }
    (build,) = [f for f in report.findings if f.code == "PP806"]
    assert version in build.extra["fits"]
    later = [f for f in report.findings if f.code == "PP803"]
    assert [f.key for f in later] == ["PP1"]
    # What triage promises of PP1 (docs/triage.md, PP803): a later failure, collateral of the
    # root, pointing at it; not gloo's words, which vary with the timing (the peer closed,
    # reset, or its read failed, the message cut wherever its length falls).
    assert f"(collateral of PP0 at {log}:{start})" in later[0].message
    assert later[0].extra["incident"] == root.extra["incident"]
    assert later[0].location.line > start
    assert "PP804" in [f.code for f in report.findings]
    assert "PP805" not in [f.code for f in report.findings]  # the culprit is not in these frames


def test_triage_recognises_the_strict_capture_sglang_loaded(driven):
    """ppaux's capture, loaded by sglang 0.5.23's own load_plugins() with
    PPAUX_CAPTURE_STRICT=1 on the last stage, stops it where the list enters the message."""
    run = driven("0.5.23", "aux-list-strict")
    log, captures = run.log, run.captures
    assert run.returncode == 1, run.stderr[-3000:]
    assert list(captures.glob("capture-*.pt"))
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert root.key == "PP1"
    assert root.extra["rule"] == "PP115"
    assert [f.key for f in report.findings if f.code == "PP808"] == ["PP1"]
    assert f"ppaux capture list --dir {captures}" in report.data["next_steps"]
