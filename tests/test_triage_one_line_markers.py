"""One-line exception records in the shapes the exception-line reading accepts, with nothing
else in the log that would stop the scan: the scanner must stop at them too."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
        (
            "RayTaskError(OutOfMemoryError):oom",
            "PP802",
            "RayTaskError(OutOfMemoryError)",
        ),
        (
            "(SchedulerActor pid=123) RayTaskError(RuntimeError):received a non-tensor "
            "auxiliary PP output",
            "PP801",
            "RayTaskError(RuntimeError)",
        ),
        (
            "(SchedulerActor pid=4242, ip=10.0.0.2) ray.exceptions.RayTaskError("
            "OutOfMemoryError): ray::SchedulerActor.run() (pid=4242, ip=10.0.0.2)",
            "PP802",
            "ray.exceptions.RayTaskError(OutOfMemoryError)",
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


#: Causes of any kind but a death (an ``ActorDiedError`` is a process that died, its own rule).
_CAUSES = ["OutOfMemoryError", "ValueError", "KeyError", "TimeoutError", "RuntimeError"]


@settings(max_examples=40, deadline=None)
@given(
    wrapper=st.sampled_from(["RayTaskError", "ray.exceptions.RayTaskError", "RayActorError"]),
    cause=st.sampled_from(_CAUSES),
    actor=st.sampled_from(["", "(SchedulerActor pid=7) ", "(TaskRunner pid=9, ip=10.0.0.3) "]),
    followed=st.booleans(),
)
def test_a_wrapper_line_is_a_record_alone_and_a_header_before_frames(
    wrapper, cause, actor, followed
):
    """Alone, ``Wrapper(Cause): ...`` is one failure of that wrapper type; with the remote
    traceback's frames on the next line, it heads that traceback: one failure, its exception
    the traceback's own line, never two."""
    lines = [f"{actor}{wrapper}({cause}): ray::Actor.run() (pid=7, ip=10.0.0.3)"]
    if followed:
        lines += [
            f'{actor}  File "/srv/app/actor.py", line 12, in run',
            f"{actor}    self.step()",
            f"{actor}ValueError: the remote step failed",
        ]
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "server.log"
        log.write_text(HEALTHY + "\n".join(lines) + "\n", encoding="utf-8")
        findings = triage_paths([str(log)]).findings
    failed = [f for f in findings if f.code in ("PP801", "PP802", "PP803")]
    assert [f.code for f in failed] == ["PP802"], [(f.code, f.message) for f in findings]
    expected = "ValueError" if followed else f"{wrapper}({cause})"
    assert failed[0].extra["exception"] == expected
    assert failed[0].location.line == 3
