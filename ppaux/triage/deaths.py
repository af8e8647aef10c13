"""Processes that died without saying why, as another process reports them, and launchers'
summaries of a child's failure.

- torchrun's failure summary whose exit code is negative (``exitcode : -9``): the rank was
  killed by that signal (SIGKILL is what the kernel's OOM killer sends);
- Ray's ``ActorDiedError`` (``The actor is dead because its worker process has died``) and
  the raylet's ``A worker died or was killed while executing a task``: a worker process died;
- supervisord's ``exited: <program> (terminated by SIGKILL; not expected)`` or ``(exit
  status 1; not expected)``: the program it runs died of a signal or ended with an error;
- DeepSpeed's launcher's ``sigkill_handler] Killing subprocess N``: the launcher killed its
  child (after another child failed, or when it was itself told to stop); its ``sigkill_handler]
  [<the child's command>] exits with return code = -11``: the child (its ``--local_rank``) that
  ended first, of a signal where the code is negative (-11: SIGSEGV), with that exit status
  otherwise;
- vLLM's ``Worker proc VllmWorker-0 died unexpectedly (exit code: -15)``: the engine saw its
  worker process end;
- a runtime's or a launcher's own record of a process it ran that died (sglang's launcher,
  Ray's memory monitor, Slurm, Kubernetes: :mod:`ppaux.triage.runtimedeaths`);
- sglang's parent's ``Child process unexpectedly failed with exitcode=9. pid=N``: a child
  ended, of a signal or with an error status (:mod:`ppaux.triage.childexits`);
- torchrun's ``ChildFailedError``: the launcher's summary of a child that failed, never a
  failure of its own; Ray Tune's ``TuneError: ('Trials did not complete', [...])`` likewise
  sums up its trials' failures;
- a relay: a process's exception that says another one failed and points elsewhere for the
  cause (vLLM's ``WorkerProc initialization failed due to an exception in a background
  process. See stack trace for root cause.``, its ``Worker failed with error '...', please
  check the stack trace above for the root cause``) and Ray's ``RayTaskError(...)`` of a remote
  task (its message the remote traceback). What it relays is the failure; where the
  relay quotes that failure's error (:func:`relayed_error`), the error is read as the failed
  process's own.

A death is no root: what killed the process (the OOM killer, an operator, a crash of its own)
is not in the log that reports it. Where nothing else failed first, triage says so (PP809,
``process-died``) and what to look at.
"""

from __future__ import annotations

import re
import signal

from ppaux.patterns import lazy
from ppaux.triage.agentstops import agent_signal
from ppaux.triage.childexits import CHILD_EXIT_MARKER, child_exit
from ppaux.triage.mpirun import MPIRUN_MARKER, mpirun_death
from ppaux.triage.records import Event, Failure
from ppaux.triage.relays import carries_own
from ppaux.triage.runtimedeaths import RUNTIME_MARKERS, killer, killer_hint, runtime_death

__all__ = [
    "DEATH_MARKERS",
    "crashed",
    "dead_one",
    "death_in_text",
    "death_of",
    "exited",
    "hint_of",
    "launcher_cleanup",
    "launcher_summary",
    "relay",
    "relayed",
    "relayed_error",
    "slurm_ended",
    "summary_name",
    "worker_died",
    "worker_name",
]

#: The raylet's line of a worker that ended, and Ray's sentence of an actor whose worker
#: process died (``The actor is dead because its worker process has died. Worker exit type:
#: SYSTEM_ERROR ...``), which a process that called the actor logs on its own.
_RAYLET = lazy(r"A worker died or was killed|The actor is dead because its worker process has died")
_RAY_PID = lazy(r"Worker PID: (?P<pid>\d{1,9})")
#: The exception a caller of a dead actor gets: ``ActorDiedError``, or its base class
#: ``RayActorError`` that Ray releases before 2.8 raise with "The actor died unexpectedly".
_ACTOR_DIED = lazy(r"(?:^|[.(])(?:ActorDiedError|RayActorError)\)?$")
_ACTOR_DIED_TEXT = lazy(r"ActorDiedError|RayActorError: The actor died")
_EXIT = lazy(r"exited with code (?P<code>-\d{1,3})\b")
_OOM = lazy(r"OOM killer|out of memory|memory pressure", re.IGNORECASE)
_EXIT_TYPE = lazy(r"Worker exit type: (?P<type>[A-Z_]{1,40})")
_CHILD_FAILED = lazy(r"(?:^|\.)ChildFailedError$")
#: Ray Tune's summary of its trials' failures (``TuneError: ('Trials did not complete',
#: [trial, ...])``): each trial's own failure, or what killed it, is the story.
_TRIALS_FAILED = lazy(r"(?:^|\.)TuneError$")
_TRIALS_MESSAGE = lazy(r"\(?['\"]?Trials did not complete")
#: supervisord's record of a program that ended when it should not have.
_SUPERVISED = lazy(
    r"\bexited: (?P<name>[\w.:-]{1,80}) \((?:terminated by (?P<signal>SIG[A-Z0-9]{1,10})"
    r"|exit status (?P<status>\d{1,3})); not expected\)"
)


#: DeepSpeed's launcher killing its child.
_LAUNCHER_KILL = lazy(r"sigkill_handler\] Killing subprocess (?P<pid>\d{1,9})")


def launcher_cleanup(text: str) -> bool:
    """True for DeepSpeed's launcher's ``Killing subprocess N``: its cleanup of the children
    once one failed (or once it was told to stop), never what a child's own failure followed."""
    return _LAUNCHER_KILL.search(text) is not None


#: DeepSpeed's launcher reporting how the child that ended first ended (its command, then the
#: return code: a signal's number below 0).
_LAUNCHER_HANDLER = "sigkill_handler] ["
_LAUNCHER_WORDS = "] exits with return code = "
_LAUNCHER_EXITS = lazy(r"\] exits with return code = (?P<code>-?\d{1,4})\b")


def _launcher_exit(text: str) -> tuple[str, int | None] | None:
    """(the command, the return code) of DeepSpeed's launcher's ``sigkill_handler] [<command>]
    exits with return code = N`` in ``text``, or None: the command's closing bracket is the
    first one the words follow, found in one pass however long the command is. The code is
    None where the line was cut before it (the launcher writes nothing else after its
    handler's name and a bracket: the command of the child that ended first)."""
    start = text.find(_LAUNCHER_HANDLER)
    if start < 0:
        return None
    opening = start + len(_LAUNCHER_HANDLER) - 1
    # the launcher writes its words after the whole list: the last of them on the line is its
    # own, earlier ones are inside an argument (``'--note=] exits with return code = -9'``)
    last = text.rfind(_LAUNCHER_WORDS)
    found = _LAUNCHER_EXITS.match(text, last) if last > opening else None
    if found is None:
        if last > opening:
            return None  # the words, with no number after them
        return text[opening:], None
    return text[opening : found.start() + 1], int(found.group("code"))


#: The launcher's own option for the child's local rank, in the command it echoes (two dashes
#: as ``-{2}``: the text is the launcher's, not an option of ppaux's): an argument of the list
#: of its own, quoted as Python writes a list (``'--local_rank=2'``, or ``'--local_rank',
#: '2'``; torch's newer spelling ``--local-rank`` too), never the words inside another
#: (``'--run_name=--local_rank=7'``); six digits at most, as ranks are read.
_LOCAL_RANK = lazy(
    r"(?:^|\[|,\s?)(?P<q>['\"])-{2}local[_-]rank(?:=|(?P=q),\s?(?P=q))(?P<rank>\d{1,6})(?P=q)"
)
#: Signals of a crash of the process's own (a core dump and the fault handler say where).
_CRASH_SIGNALS = lazy(r"\bSIG(?:SEGV|ABRT|BUS|ILL|FPE)\b")
#: vLLM's engine reporting that a worker process ended: its record's message begins so (after
#: the logger's ``[file.py:N] `` where that is still there), never words inside another
#: record's text (a request or a batch's text that quotes them, unquoted, in an INFO line).
_WORKER_PROC = lazy(
    r"(?:^|(?<=\] ))Worker proc (?P<name>[\w.-]{1,80}) died unexpectedly"
    r"(?: \(exit code: (?P<code>-?\d{1,4})\))?"
)
#: A process's exception that relays another's failure and points elsewhere for its cause.
_RELAY_WORDS = (
    r"failed due to an exception in a background process|"
    r"[Ss]ee (?:the )?stack trace (?:above )?for (?:the )?root cause|"
    r"[Ss]ee (?:the )?root cause above|"
    r"check the stack trace above for the root cause"
)
#: (and sglang's launcher's word that the server it waits for exited: ``Server process exited
#: with code -9``, its utils' and its tests' launch of the server, 0.5.19 - 0.5.23)
_RELAY = lazy(
    _RELAY_WORDS
    + r"|^Worker failed with error ['\"\u2018\u201c]|^Server process exited with code -?\d{1,4}\b"
)
#: Ray's error of a remote task or actor: the remote process's failure, carried to the caller.
_RAY_RELAY = lazy(r"(?:^|\.)Ray(?:Task|Actor)Error\b")
#: The error a relay quotes (vLLM's ``Worker failed with error '<error>', please check ...``).
_QUOTED = lazy(
    r"^Worker failed with error ['\"\u2018\u201c](?P<error>.{1,2000}?)['\"\u2019\u201d]?"
    r"(?:, please check|$)",
    re.S,
)


def relay(failure: Failure) -> bool:
    """True when ``failure``'s exception relays another process's failure (:data:`_RELAY`,
    or Ray's error of a remote task or actor, :data:`_RAY_RELAY`); not where it carries a
    failure of its own, in its chain or before the relay's words
    (:func:`~ppaux.triage.relays.carries_own`)."""
    if failure.exception is None:
        return False
    if failure.relayed_by is not None or _RAY_RELAY.search(failure.exception) is not None:
        return True
    words = _RELAY.search(failure.message[:2000])
    return words is not None and not carries_own(failure, words.start(), _RELAY)


def relayed_error(failure: Failure) -> str | None:
    """The error a relay quotes (its first line: Ray's carries the remote one's whole), or
    None where it quotes none."""
    if not relay(failure):
        return None
    if failure.relayed_by is not None or _RAY_RELAY.search(failure.exception or "") is not None:
        return failure.error
    quoted = _QUOTED.search(failure.message[:2000])
    if quoted is None:
        return None
    return quoted.group("error").split("\n", 1)[0].strip() or None


def worker_name(text: str) -> str | None:
    """The worker a vLLM engine's ``Worker proc X died unexpectedly`` line names, else None."""
    found = _WORKER_PROC.search(text)
    return None if found is None else found.group("name")


#: A shell's exit status of a child a signal killed: 128 and the signal's number.
_SHELL_SIGNAL = 128


def _ended(code: int, by: str) -> str:
    """How a child whose return code ``by`` reports as ``code`` ended: a signal's number below
    0, or a shell's 128 plus a signal's (139: SIGSEGV); an exit status otherwise."""
    if code < 0:
        return f"died: killed by {_signal_name(-code)} (signal {-code}; {by})"
    number = code - _SHELL_SIGNAL
    if 0 < number < signal.NSIG:
        return (
            f"died: exited with status {code}, a shell's report of {_signal_name(number)} "
            f"(128 + signal {number}; {by})"
        )
    return f"died: exited with status {code} ({by})"


def exited(how: str) -> bool:
    """True where a process died ``how`` with an exit status of its own, no signal: an error
    it reported itself (its own output says which), not a kill."""
    return "exited with status" in how and "SIG" not in how


def slurm_ended(how: str) -> bool:
    """True where Slurm itself ended the process (its time limit, a pre-emption, a
    cancellation): the log says what ended it."""
    return killer(how) == "slurm-cancel"


def crashed(how: str) -> bool:
    """True where a process died ``how`` of a crash of its own (SIGSEGV, SIGABRT, SIGBUS,
    SIGILL, SIGFPE): a core dump and the fault handler say where, not the OOM killer."""
    return _CRASH_SIGNALS.search(how) is not None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def death_of(record: Failure | Event) -> str | None:
    """How the process ``record`` reports died ('killed by SIGKILL (signal 9)', 'its Ray
    worker process died (SYSTEM_ERROR)'), or None when ``record`` reports no death."""
    if isinstance(record, Event):
        if record.kind != "death":
            return None
        if (runtime := runtime_death(record.text)) is not None:
            return runtime[1]
        if (child := child_exit(record.text) or mpirun_death(record.text)) is not None:
            return child[1]
        supervised = _SUPERVISED.search(record.text)
        if supervised is not None:
            return _supervised_end(supervised)
        if (ended := _launcher_exit(record.text)) is not None:
            if ended[1] is None:
                return "died: the line that gives its return code is cut (DeepSpeed's launcher)"
            return _ended(ended[1], "DeepSpeed's launcher")
        if _LAUNCHER_KILL.search(record.text) is not None:
            return "was killed by its launcher (DeepSpeed's sigkill_handler)"
        if (worker := _WORKER_PROC.search(record.text)) is not None:
            code = worker.group("code")
            if code is not None and int(code) < 0:
                number = -int(code)
                return f"died: killed by {_signal_name(number)} (signal {number})"
            return "died" + (f" (exit code {code})" if code is not None else "")
        exit_type = _EXIT_TYPE.search(record.text)
        how = "SYSTEM_ERROR" if "unexpected system error" in record.text else None
        how = exit_type.group("type") if exit_type is not None else how
        return "died: its Ray worker process ended" + (f" ({how})" if how else "")
    if relay(record) and relayed_error(record) is None:
        return f"{_RELAYED} (its exception says to look elsewhere for the root cause)"
    if record.exception is None:
        code = _EXIT.search(record.said or "")
        if code is None:
            return None
        number = -int(code.group("code"))
        return f"was killed by {_signal_name(number)} (signal {number})"
    if (stopped := agent_signal(record.exception, record.message)) is not None:
        return stopped
    types = [record.exception, *(t for t, _ in record.chain)]
    if not any(_ACTOR_DIED.search(t) for t in types):
        return None
    if "ActorDiedError" not in " ".join(types) and "died" not in record.message:
        return None  # a RayActorError that says no actor died (one restarting, unavailable)
    exit_type = _EXIT_TYPE.search(record.message)
    notes = [] if exit_type is None else [exit_type.group("type")]
    if _OOM.search(record.message):
        notes.append("Ray names the OOM killer among the likely causes")
    return "died: its Ray worker process ended" + (f" ({'; '.join(notes)})" if notes else "")


_ACTOR_CLASS = lazy(r"^\s*class_name: (?:\S{0,200}\.)?(?P<name>\w{1,80})\s*$", re.MULTILINE)
_ACTOR_PID = lazy(r"^\s*pid: (?P<pid>\d{1,9})\s*$", re.MULTILINE)


def dead_one(record: Failure | Event) -> str:
    """Who died, as the record names it: a Ray actor's class and pid ('WorkerDict pid=20174'),
    else the record's own process."""
    if isinstance(record, Failure) and record.exception is not None:
        name = _ACTOR_CLASS.search(record.message)
        pid = _ACTOR_PID.search(record.message)
        if pid is not None:
            return f"{name.group('name') if name else 'Ray actor'} pid={pid.group('pid')}"
    return record.who


#: How :func:`how_it_ended` says a process relays another's failure.
_RELAYED = "reports that a process it started failed"


def relayed(how: str) -> bool:
    """True where ``how`` says the process relays the failure of one it started (vLLM's
    ``WorkerProc initialization failed due to an exception in a background process``): an
    exception raised there, not a kill."""
    return _RELAYED in how


def hint_of(how: str) -> str:
    """Where to look for what killed a process that died ``how``."""
    if (name := killer(how)) is not None:
        return killer_hint(name)
    if relayed(how):
        return "look for that process's own traceback, earlier in its log or in its own log"
    if exited(how):
        return (
            "it ended with an error of its own, not a kill: its own output (its stderr, its "
            "traceback) says which"
        )
    if crashed(how):
        return (
            "a crash of its own: its core dump (coredumpctl, or the core file) and its fault "
            "handler's output (PYTHONFAULTHANDLER=1) name where"
        )
    if "SIGKILL" in how or "Ray" in how:
        return (
            "look for the kernel's OOM killer on its host (dmesg, journalctl -k: 'Killed "
            "process') and for that process's own log"
        )
    return "look for that process's own log and a core dump or the kernel's log of its host"


def _supervised_end(found: re.Match[str]) -> str:
    """How a program supervisord reports ended: of a signal, or with an error status."""
    name = found.group("signal")
    if name is not None:
        number = getattr(signal, name, None)
        return f"was killed by {name}" + (f" (signal {int(number)})" if number else "")
    return f"exited with status {found.group('status')}, which supervisord did not expect"


#: What a death another process reports holds, one of these at least (the scanner's markers
#: for it): a line with none of them is no death, told before any pattern is tried.
DEATH_MARKERS: tuple[bytes, ...] = (
    b"A worker died or was killed",
    b"; not expected)",
    b"Killing subprocess",
    b"exits with return code",
    b"sigkill_handler] [",  # the same line, cut before its return code
    b"died unexpectedly",
    b"The actor is dead because its worker process has died",
    CHILD_EXIT_MARKER,
    MPIRUN_MARKER,
    *RUNTIME_MARKERS,
)
_DEATH_WORDS = tuple(marker.decode() for marker in DEATH_MARKERS)


def worker_died(text: str) -> str | None:
    """Who died, for a raylet's ``A worker died or was killed`` line ('Ray worker pid=442') or
    supervisord's ``exited: ... not expected`` ('sglang (supervisord's program)'), or None for
    another line."""
    if not any(words in text for words in _DEATH_WORDS):
        return None
    supervised = _SUPERVISED.search(text)
    if supervised is not None:
        return f"{supervised.group('name')} (supervisord's program)"
    if (runtime := runtime_death(text)) is not None:
        return runtime[0]
    if (child := child_exit(text) or mpirun_death(text)) is not None:
        return child[0]
    if (ended := _launcher_exit(text)) is not None:
        if ended[1] == 0:
            return None
        rank = _LOCAL_RANK.search(ended[0])
        return "the launcher's child" if rank is None else f"local_rank {rank.group('rank')}"
    if (killed := _LAUNCHER_KILL.search(text)) is not None:
        return f"subprocess {killed.group('pid')}"
    if (worker := _WORKER_PROC.search(text)) is not None:
        return worker.group("name")
    if _RAYLET.search(text) is None:
        return None
    pid = _RAY_PID.search(text)
    return "a Ray worker" if pid is None else f"Ray worker pid={pid.group('pid')}"


#: torchrun's own code, in a frame's file: its entry point and its elastic agent.
_TORCHRUN_FILE = lazy(r"/bin/torchrun$|torch/distributed/run\.py$|torch/distributed/elastic/")


def launcher_summary(failure: Failure) -> bool:
    """True for a launcher's exception about a child that failed (torchrun's
    ``ChildFailedError``), or torchrun's own traceback cut before it (its frames all
    torchrun's, behind runpy's): the child's failure is the story, never the launcher's."""
    if failure.exception is None:
        # ``python -m torch.distributed.run`` enters through runpy's frames
        files = [frame.file for frame in failure.frames if not frame.file.endswith("runpy.py")]
        return bool(files) and _TORCHRUN_FILE.search(files[0]) is not None
    if _TRIALS_FAILED.search(failure.exception) is not None:
        return _TRIALS_MESSAGE.match(failure.message) is not None
    return _CHILD_FAILED.search(failure.exception) is not None


def summary_name(failure: Failure) -> str:
    """The launcher's summary that ``failure`` is (:func:`launcher_summary`), in words."""
    if failure.exception is not None and _TRIALS_FAILED.search(failure.exception):
        return "Ray Tune's TuneError: Trials did not complete"
    return "torchrun's ChildFailedError"


_SIGNAL_LINE = lazy(r"Signal (?P<number>\d{1,3}) \((?P<name>SIG[A-Z0-9]{1,10})\) received by PID")
_EXIT_LINE = lazy(r"exitcode\s*:\s*(?P<code>-\d{1,3})\b")
#: A relay's words anywhere in a pasted line, and the error one quotes.
_RELAY_TEXT = lazy(_RELAY_WORDS)
_QUOTED_TEXT = lazy(r"Worker failed with error ['\"\u2018\u201c]")
#: The parent's record of a failing child (sglang's engine and tokenizer manager).
_SIGQUIT = lazy(r"[Rr]eceived sigquit from a child|SIGQUIT received")
_CHILD_FAILED_TEXT = lazy(r"(?:^|[\s.])ChildFailedError\b")


def _relay_words(text: str) -> str:
    """What ``explain`` says of a relay's line, in the same words for vLLM's older relay and
    its newer one, which quotes the error it relays."""
    opened = _QUOTED_TEXT.search(text)
    quoted = None if opened is None else _QUOTED.search(text[opened.start() :][:2000])
    error = None if quoted is None else quoted.group("error").split("\n", 1)[0].strip()
    said = f" (it quotes that process's error: '{error}')" if error else ""
    held = "reads the quoted error as that process's" if error else "says so"
    return (
        "it relays another process's failure and says to look elsewhere for the root cause, "
        f"not a failure of its own{said}: that process's own traceback is the root; 'ppaux "
        f"triage' on the whole log names it, or, where the log does not hold it, {held}"
    )


def death_in_text(text: str) -> str | None:
    """What a pasted line or summary says of a process's death or a launcher's summary, for
    ``ppaux explain``: where to look, since the cause is not in it; None for other text."""
    signal_line = _SIGNAL_LINE.search(text)
    exit_line = _EXIT_LINE.search(text)
    supervised = _SUPERVISED.search(text)
    how: str | None = None
    if supervised is not None:
        how = _supervised_end(supervised)
    elif signal_line is not None:
        how = f"was killed by {signal_line.group('name')} (signal {signal_line.group('number')})"
    elif exit_line is not None:
        number = -int(exit_line.group("code"))
        how = f"was killed by {_signal_name(number)} (signal {number})"
    elif (child := child_exit(text) or mpirun_death(text) or runtime_death(text)) is not None:
        how = child[1]
    elif (ended := _launcher_exit(text)) is not None and ended[1]:
        how = _ended(ended[1], "DeepSpeed's launcher")
    elif ended is not None and ended[1] is None:
        how = "died: the line that gives its return code is cut (DeepSpeed's launcher)"
    elif _RAYLET.search(text) is not None or _ACTOR_DIED_TEXT.search(text) is not None:
        how = "died: its Ray worker process ended"
    if how is not None:
        name = killer(how)
        limit = name not in (None, "container-memory", "slurm-cancel")  # 137: limit or host's
        said = "its memory limit ended it" if limit else "not what ended it"
        said = "Slurm ended it" if name == "slurm-cancel" else said
        return (
            f"it reports that a process {how}, and {said}: {hint_of(how)}; "
            "'ppaux triage' on the whole log says whether anything failed before it"
        )
    if _RELAY_TEXT.search(text) is not None:
        return _relay_words(text)
    if _SIGQUIT.search(text) is not None:
        return (
            "it is the parent process's record of a SIGQUIT from a failing child (what triage "
            "lists as PP804, collateral of the root), not a failure of its own: the child's "
            "traceback, before it in the log, is the root; 'ppaux triage' on the whole log "
            "names it"
        )
    if _CHILD_FAILED_TEXT.search(text) is not None:
        return (
            "it is torchrun's summary of a child that failed (ChildFailedError), never a "
            "failure of its own: read the child's failure, its rank's traceback or the "
            "summary's Root Cause (an exit code below 0 is a signal: -9 is SIGKILL, often the "
            "host's OOM killer); 'ppaux triage' on the whole log names it"
        )
    return None
