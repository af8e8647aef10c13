"""The check's child process: ``python -I -m ppaux.observer.worker``, its request on stdin.

It imports ppaux's own modules and torch (and sglang's request classes where sglang is
importable) first, then the target (the file form's folder is put at the end of the import
path, never ahead of the standard library; the parent's other entries follow it), drives it
(:mod:`.runner`) and writes each record to the records' descriptor as a frame (:mod:`.framing`)
marked with its pid. A fork of this process that reaches a record says so and ends at once, so
that only this process answers. ``REQUEST`` is JSON: the target, the outputs target, the
options and the parent's import path. It exits without waiting for the target's threads; their
names are in the last record. ``REQUEST`` (JSON, read whole from stdin, which is then
/dev/null) names the records' descriptor (``fd``), the hook slot's (``slot``: see
:mod:`.framing`; mapped, then closed, before the target loads), the target, the outputs
target, the options and the parent's import path.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from ppaux.observer.apart import RankZero
    from ppaux.observer.lines import Announce, Place
    from ppaux.observer.options import ObserverOptions
    from ppaux.observer.runner import Emit

__all__ = ["main"]


def _writer(fd: int) -> Emit:
    from ppaux.observer.framing import encode

    pid = os.getpid()

    def emit(message: dict[str, Any]) -> None:
        if os.getpid() != pid:  # a fork of the child: it may not answer for it
            try:
                os.write(fd, encode({"event": "forked", "pid": os.getpid()}))
            finally:
                os._exit(0)
        message["pid"] = pid
        data = memoryview(encode(message))
        try:
            while data:
                written = os.write(fd, data)
                data = data[written:]
        except OSError:
            # The records' descriptor is gone (the target closed it, or its parent ended):
            # nothing more can be said, and no traceback of ppaux's is the target's output.
            os._exit(1)

    return emit


def _announcer(slot_fd: int, emit: Emit) -> tuple[Any, Callable[[], None]]:
    """What tells the parent which hook runs: the hook slot (see :mod:`.framing`), mapped from
    ``slot_fd`` (then closed). A hook's record is made once per place it is defined; a fork
    of the child that reaches a hook ends there as at a record (``emit``), but for rank 0's
    process, which calls the second function returned (it adopts the slot)."""
    import mmap
    import time

    from ppaux.observer.drive import shown_path
    from ppaux.observer.framing import SLOT_SIZE, slot_bytes, slot_entry, slot_step
    from ppaux.observer.lines import announce_steps

    slot = mmap.mmap(slot_fd, SLOT_SIZE)
    os.close(slot_fd)
    owner = [os.getpid()]
    made: dict[str | None, tuple[Any, bytes]] = {}
    monotonic = time.monotonic

    def announce(method: str | None, where: Place | None) -> None:
        if os.getpid() != owner[0]:
            emit({"event": "hook", "method": method})  # a fork: it ends there
        then = made.get(method)
        if then is None or then[0] != where:
            shown = None if where is None else [shown_path(where[0]), *where[1:]]
            body = slot_entry({"event": "hook", "method": method, "where": shown})
            then = made[method] = (where, body)
        data = slot_bytes(then[1], monotonic())
        slot[: len(data)] = data

    def step(batch_size: int, index: int) -> None:
        at, data = slot_step(batch_size, index)
        slot[at : at + len(data)] = data

    def adopt() -> None:
        """This process (rank 0's, forked by the child: :mod:`.apart`) announces its hooks."""
        owner[0] = os.getpid()

    announce_steps(step)
    return announce, adopt


def _die_with_parent() -> None:
    """Be killed when the parent dies (Linux's PR_SET_PDEATHSIG), whatever kills it: a CI
    job's timeout or a SIGTERM gives the parent no chance to end its child. Elsewhere, or where
    the call fails, the parent's own cleanup is all there is."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # no libc to ask, or no prctl in it
        return
    if os.getppid() != parent:  # the parent died before the call: nobody reads the records
        os._exit(1)


#: Linux's capability number of CAP_SYS_PTRACE, and the capget/capset header version 3.
_CAP_SYS_PTRACE = 19
_CAPABILITY_VERSION_3 = 0x20080522
_PR_CAPBSET_DROP = 24


def _drop_ptrace() -> None:
    """Give up CAP_SYS_PTRACE (Linux; a check run as root has it): with it, a process may open
    the files of a process that is not dumpable (``/proc/<parent>/fd/1``, the report's stream)
    whoever owns it. Dropped from the bounding set too, so that no program the target runs
    gets it back. Where the calls fail (no libc, no such capability) nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    class Data(ctypes.Structure):
        _fields_ = (
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        )

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_CAPBSET_DROP, _CAP_SYS_PTRACE, 0, 0, 0)
        header = Header(_CAPABILITY_VERSION_3, 0)
        data = (Data * 2)()
        if libc.capget(ctypes.byref(header), data) != 0:
            return
        bit = ~(1 << _CAP_SYS_PTRACE) & 0xFFFFFFFF
        data[0].effective &= bit
        data[0].permitted &= bit
        data[0].inheritable &= bit
        libc.capset(ctypes.byref(header), data)
    except (OSError, AttributeError):  # no libc to ask, or no capget in it
        return


def _read_request() -> dict[str, Any]:
    """The request, read whole from stdin (so that neither argv nor the environment names the
    records' descriptor); stdin is then /dev/null, as the target sees it."""
    import json

    data = bytearray()
    while chunk := os.read(0, 1 << 16):
        data += chunk
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    request = json.loads(data.decode("utf-8"))
    assert isinstance(request, dict)
    return request


def _hidden(fd: int) -> int:
    """``fd`` moved to a descriptor number picked at random among the high ones (the one the
    parent passed is closed), so that a target writing on the low numbers or on the one the
    parent chose misses it. A mitigation against accident, not a secret: ``/proc/self/fd``
    lists it."""
    import random
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Below 1024 (the usual soft limit, and what a select()-based library can wait on).
    top = min(soft if soft > 0 else 1024, 1024)
    if top <= 512:
        return fd
    for _ in range(8):
        number = random.SystemRandom().randrange(256, top)
        try:
            os.fstat(number)  # in use: pick another
        except OSError:
            os.dup2(fd, number, inheritable=False)
            os.close(fd)
            return number
    return fd


def _raised(exc: BaseException) -> str:
    """'<Type>: <first line of its message>' of an exception of the target's, bounded."""
    from ppaux.observer.drive import message_line

    line = message_line(exc)
    name = type(exc).__name__
    return (f"{name}: {line}" if line else name)[:500]


def _timers_left() -> list[list[Any]]:
    """The interval timers the target set and left running (``signal.alarm``, ``setitimer``),
    each cancelled: [its signal's name, the seconds it had left]. In sglang the signal would
    come later, to the scheduler."""
    from ppaux.observer.inhand import cancel_timers

    return [[name, left] for name, left in cancel_timers()]


def main(argv: list[str]) -> int:
    """Run one check (see the module's docstring)."""
    from ppaux.observer import fresh
    from ppaux.observer.interpreter import put_back

    _die_with_parent()
    _drop_ptrace()
    request = _read_request()
    put_back(request.pop("environ", {}))
    records = _hidden(int(request.pop("fd")))
    emit = _writer(records)
    # Rank 0's fresh process first, so that its imports overlap this one's (:mod:`.fresh`).
    rank0 = None if fresh.forking() else fresh.start(request, records, int(request["slot"]))
    forked = None
    options, announce, adopt = _before_the_target(request, emit)
    if rank0 is None:
        forked = (
            f"the test suite's hook {fresh.FORK_HOOK}=1 asked for a fork"
            if fresh.forking()
            else "a fresh interpreter could not start"
        )
        rank0 = _rank0_apart(request, options, (announce, adopt), int(request["crash"]))
    else:
        rank0.wait_ready()
    left: list[str] = []
    try:
        _check(request, options, announce, emit, rank0, forked)
    finally:
        if rank0 is not None:
            left = [f"{name} (in rank 0's process)" for name in rank0.threads()]
            rank0.close()
    _end(emit, request.get("report"), left)
    os._exit(0)


def _rank0_apart(
    request: dict[str, Any],
    options: ObserverOptions,
    hooks: tuple[Any, Callable[[], None]],
    crash_fd: int,
) -> RankZero | None:
    """Rank 0's process (:mod:`.apart`), forked before the target is imported: it keeps
    neither the crash file's descriptor nor its ``faulthandler`` (a fatal signal there is
    told by how it ended), dies with this process and announces its own hooks in the slot
    (``hooks``: the announcer and what makes it the slot's owner). It keeps the records'
    descriptor, on which only a fork of its own writes (to say that it forked)."""
    import faulthandler

    from ppaux.observer.apart import how_loaded, loader, start

    announce, adopt = hooks
    how = how_loaded(request)

    def first() -> None:
        faulthandler.disable()
        with contextlib.suppress(OSError):
            os.close(crash_fd)
        _die_with_parent()
        adopt()

    load = loader(str(request["target"]), options, how, announce)
    return start(load, how, first, _hidden, announce)


def _before_the_target(
    request: dict[str, Any], emit: Emit
) -> tuple[ObserverOptions, Any, Callable[[], None]]:
    """The signals unblocked, torch and ppaux's own modules imported, the options read, the
    import path extended and the hooks announced: what comes before the target's own code (the
    modules :func:`_check` needs are imported too before it says it is ready); the options and
    what announces a hook (:func:`_announcer`)."""
    # The signals the checking process blocked to read them (its mask is inherited): the
    # target runs with the mask its caller had, so its own timers and signals act as in sglang.
    import signal

    signal.pthread_sigmask(signal.SIG_UNBLOCK, {int(n) for n in request.pop("unblock", [])})
    # ppaux's own modules (and torch) before any of the target's code.
    import warnings

    # torch warns on import when numpy is absent; the check never needs numpy itself.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)

    import torch  # noqa: F401  (before the target, which may patch it)

    from ppaux.observer.torch_threads import note_torchs_threads

    note_torchs_threads()

    import ppaux.observer.check as check
    import ppaux.observer.lines as lines
    import ppaux.observer.requests as requests
    from ppaux.observer.drive import interrupts_are_the_targets

    settings = dict(request["options"])
    settings["batch_sizes"] = tuple(settings["batch_sizes"])
    options = check.ObserverOptions(**settings)
    # The asking process's path where Python put it for the user: after the standard library,
    # ahead of site-packages (a project's PYTHONPATH=src before an installed copy).
    import site

    from ppaux.replay import Transport, ordered_path

    sys.path[:] = ordered_path(sys.path, request.get("path", []), site.getsitepackages())
    # sglang's Req and ScheduleBatch with the sglang transport, where sglang is importable:
    # imported before the target too, and before the start allowance ends (sglang's import is
    # the slow part).
    requests.request_kit(options.transport is Transport.SGLANG)
    announce, adopt = _announcer(int(request.pop("slot")), emit)
    # A fatal signal writes the frames it ended in where the parent reads them (.crash).
    import faulthandler

    if "crash" in request:  # rank 0's fresh process has none (:mod:`.fresh`)
        faulthandler.enable(file=int(request["crash"]), all_threads=False)
    # No person can interrupt this process (a session of its own; the parent ends it on
    # Ctrl-C): a KeyboardInterrupt here is the target's, reported as its other exceptions are.
    interrupts_are_the_targets()
    lines.announce_hooks(announce)
    return options, announce, adopt


def _check(
    request: dict[str, Any],
    options: ObserverOptions,
    announce: Announce,
    emit: Emit,
    rank0: RankZero | None = None,
    forked: str | None = None,
) -> None:
    """Load the target and run the checks; what stops them is a record. The hooks are no
    longer announced after it."""
    import ppaux.observer.check as check
    import ppaux.observer.lines as lines
    import ppaux.observer.parts as parts
    import ppaux.observer.runner as runner
    import ppaux.observer.target as target_module
    from ppaux.errors import PpauxError
    from ppaux.observer.digests import digest_budget
    from ppaux.observer.drive import where_raised
    from ppaux.observer.endings import LOADING, SETTING_UP
    from ppaux.replay import Transport
    from ppaux.suggestions import Setting

    ready: dict[str, Any] = {"event": "ready"}
    if rank0 is not None:
        ready["rank0"] = rank0.pid
    if forked is not None:  # rank 0's process shares this one's hash seed: the report says so
        ready["rank0_forked"] = forked
    emit(ready)
    try:
        announce(LOADING, None)
        loaded = target_module.load_observer(
            request["target"], rank0_only=request.get("outputs") is not None
        )
        asked = request.get("limits", {})
        given = (
            target_module.load_outputs(request["outputs"], int(asked.get("max_outputs", 0)) or None)
            if request.get("outputs") is not None
            else None
        )
        announce(SETTING_UP, None)
        if options.transport in (Transport.TORCH_DISTRIBUTED, Transport.SGLANG):
            # the receiving process starts now: its start-up is bounded on its own
            emit({"event": "receiver"})
        budget = int(asked.get("max_digested_items", 0)) or None
        nesting = int(asked.get("max_value_nesting", 0)) or None
        elements = int(asked.get("max_digested_elements", 0)) or None
        with (
            parts.machinery(options) as (machinery, info, device, sglang_parts),
            (
                digest_budget(budget, nesting, elements)
                if budget is not None
                else contextlib.nullcontext()
            ),
        ):
            announce(None, None)
            runner.run_checks(
                loaded, options, machinery, info, device, sglang_parts, given, emit, rank0
            )
    except target_module.TargetError as exc:
        emit({"event": "target_error", "target": exc.target, "reason": exc.reason})
    except check.ObserverConfigError as exc:
        emit(
            {
                "event": "config_error",
                "option": exc.option,
                "value": exc.value,
                "reason": exc.reason,
                # What would work, as data: (name, value, what) of each setting to give.
                "settings": [
                    [s.name, s.value, s.what] for s in exc.suggestions if isinstance(s, Setting)
                ],
            }
        )
    except PpauxError as exc:
        emit({"event": "failed", "text": str(exc)[:2000]})
    except SystemExit as exc:  # sys.exit() in the target outside the methods driven
        emit({"event": "target_exit", "code": None if exc.code is None else str(exc.code)[:200]})
    except BaseException as exc:  # KeyboardInterrupt, GeneratorExit... outside the methods
        emit({"event": "target_raised", "text": _raised(exc), "location": where_raised(exc)})
    lines.announce_hooks(None)


def _module_at(path: object) -> str | None:
    """The name of a module loaded in this process from the file ``path`` (where the report
    is to be written), or None."""
    if not isinstance(path, str):
        return None
    try:
        wanted = os.stat(path)
    except (OSError, ValueError):  # not there (then it is no module's file), or unreadable
        return None
    for name, module in list(sys.modules.items()):
        try:
            file = getattr(module, "__file__", None)
            if isinstance(file, str) and os.path.samestat(os.stat(file), wanted):
                return str(name)[:200]
        except Exception:  # a module object of the target's that refuses to be looked at
            continue
    return None


def _end(emit: Emit, report: object = None, rank0_threads: list[str] | None = None) -> None:
    """The last record (the threads and timers the target left, here and in rank 0's
    process, ``rank0_threads``; the module loaded from the report's file ``report``, if any),
    the streams flushed."""
    from ppaux.observer.apart import threads_left

    threads = [*threads_left(), *(rank0_threads or [])]
    message = {"event": "end", "threads": threads[:20], "timers": _timers_left()}
    module = _module_at(report)
    if module is not None:
        message["report_module"] = module
    emit(message)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # the target replaced or closed the stream
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv))
