"""One-line exception records in the shapes the exception-line reading accepts, with nothing
else in the log that would stop the scan: the scanner must stop at them too."""

from __future__ import annotations

import pytest

from ppaux.triage import triage_paths

HEALTHY = (
    "[2026-12-03 14:56:05 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16\n"
    "[2026-12-03 14:56:06 PP0] Decode batch. #running-req: 1, #token: 100\n"
)


@pytest.mark.parametrize(
    ("record", "code", "exception"),
    [
        (
            "[2026-12-03 14:56:07 PP1] RuntimeError :received a non-tensor auxiliary PP output",
            "PP801",
            "RuntimeError",
        ),
        (
            "[2026-12-03 14:56:07 PP1] ValueError :the batch is empty",
            "PP802",
            "ValueError",
        ),
    ],
)
def test_a_one_line_record_alone_is_the_root(tmp_path, record, code, exception):
    log = tmp_path / "server.log"
    log.write_text(HEALTHY + record + "\n", encoding="utf-8")
    findings = triage_paths([str(log)]).findings
    roots = [f for f in findings if f.code in ("PP801", "PP802", "PP809")]
    assert [f.code for f in roots] == [code], [(f.code, f.message) for f in findings]
    assert roots[0].extra["exception"] == exception


@pytest.mark.parametrize(
    ("raised", "code"),
    [
        # Ray re-raises the actor's own exception: the nine messages are sglang's RuntimeError.
        (
            "ray.exceptions.RayTaskError(RuntimeError): received a non-tensor auxiliary PP output",
            "PP801",
        ),
        (
            "ray.exceptions.RayTaskError(ValueError): received a non-tensor auxiliary PP output",
            "PP802",
        ),
    ],
)
def test_a_wrapper_type_is_read_by_the_cause_it_carries(tmp_path, raised, code):
    log = tmp_path / "server.log"
    log.write_text(
        HEALTHY
        + "[2026-12-03 14:56:07 PP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/srv/sglang/srt/managers/scheduler.py", line 3076, in run_scheduler_process\n'
        "    scheduler.event_loop_pp()\n" + raised + "\n",
        encoding="utf-8",
    )
    findings = triage_paths([str(log)]).findings
    roots = [f for f in findings if f.code in ("PP801", "PP802", "PP809")]
    assert [f.code for f in roots] == [code], [(f.code, f.message) for f in findings]
