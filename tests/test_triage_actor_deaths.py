"""Ray's sentence of an actor whose worker process died (``The actor is dead because its worker
process has died. Worker exit type: SYSTEM_ERROR ...``), logged by the process that called the
actor, is a death of that worker: alone it is no root but a failure (PP809, process-died, exit
1) that points at the OOM killer; a traceback after it (vLLM's engine failing to start) is its
consequence. Inside an ``ActorDiedError``'s message it is that error's own text, never a
second death.

Expected values are written here by hand, never computed with triage's code.
"""

from __future__ import annotations

import io

import pytest

from ppaux.triage import triage_paths

SENTENCE = (
    "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
    "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. "
    "There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer "
    "due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed "
    "unexpectedly due to SIGSEGV or other unexpected errors."
)
ENGINE_CUT = [
    "Process EngineCore_0:",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
    "    self.run()",
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 387, in '
    "run_engine_core",
    "    engine_core = EngineCoreProc(*args, **kwargs)",
]


def _findings(text: str) -> list[tuple[str, str | None]]:
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    return [(f.code, f.extra.get("no_root")) for f in report.findings if f.code.startswith("PP8")]


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "ERROR 07-09 13:21:18 [core.py:396] ",
        "(EngineCore pid=1) ERROR 07-09 13:21:18 [core.py:396] ",
    ],
)
def test_the_sentence_alone_is_a_worker_s_death(prefix):
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(f"{prefix}{SENTENCE}\n".encode())})
    (found,) = [f for f in report.findings if f.code.startswith("PP8")]
    assert (found.code, found.extra.get("no_root")) == ("PP809", "process-died")
    assert "SYSTEM_ERROR" in found.message
    assert "OOM killer" in found.message


def test_the_engine_s_traceback_after_it_is_its_consequence():
    text = "\n".join([f"ERROR 07-09 13:21:18 [core.py:396] {SENTENCE}", *ENGINE_CUT]) + "\n"
    assert _findings(text) == [("PP809", "process-died")]


def test_inside_an_actor_died_error_it_is_one_death():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/app/main.py", line 10, in <module>\n'
        "    ray.get(ref)\n"
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: WorkerDict\n"
        "\tpid: 20174\n"
        f"{SENTENCE}\n"
    )
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    (found,) = [f for f in report.findings if f.code.startswith("PP8")]
    assert found.code == "PP809"
    assert "WorkerDict pid=20174" in found.message
    assert "more record" not in found.message


def test_ray_actor_error_after_the_sentence_is_the_same_death():
    # Ray before 2.8 raises the base class, RayActorError, with the same words; the sentence
    # of the worker's death comes first in the job's log (as a verl job's tail shows it).
    text = (
        f"{SENTENCE}\n"
        "\n"
        "Status message: Job entrypoint command failed with exit code 1\n"
        '  File "/srv/verl/single_controller/ray/base.py", line 42, in func\n'
        "    output = ray.get(output)\n"
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
        "        class_name: create_colocated_worker_cls.<locals>.WorkerDict\n"
        "        pid: 71876\n"
    )
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    codes = [(f.code, f.extra.get("no_root")) for f in report.findings if f.code.startswith("PP8")]
    assert codes == [("PP809", "process-died")]
    (found,) = [f for f in report.findings if f.code == "PP809"]
    assert "WorkerDict pid=71876 died: its Ray worker process ended" in found.message


def test_a_ray_actor_error_of_another_kind_is_no_death():
    # RayActorError's words that say nothing of a death (an actor restarting) are no death.
    from ppaux.triage import death_in_text

    assert death_in_text("ray.exceptions.RayActorError: The actor is restarting") is None


def test_a_ray_actor_error_that_says_no_death_is_no_death_in_triage():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/app/main.py", line 10, in <module>\n'
        "    ray.get(ref)\n"
        "ray.exceptions.RayActorError: The actor is temporarily unavailable: restarting.\n"
    )
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(text.encode())})
    assert all(f.extra.get("no_root") != "process-died" for f in report.findings)
