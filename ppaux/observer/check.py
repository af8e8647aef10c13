"""``check-observer``: drive a sampling observer, send each output down both paths, compare.

:func:`check_observer` validates the options, then runs the target in a child process of its
own (:mod:`.child`, :mod:`.worker`): the child loads the target (its code runs there, never
here), drives it for ``steps`` forwards at each batch size, runs every output down the
single-stage path and the PP path (:mod:`ppaux.observer.paths`) through the chosen wire and
implementation, and sends what happened as records (:mod:`.runner`). This process judges them
(:mod:`.judge`) into findings PP701 - PP718: every error sglang raises (verbatim), every error
the target's methods raise, every difference between the two paths, outputs a later step
overwrites, every way the child ended. :func:`check_loaded` judges an object in hand alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ppaux.limits import Limits
from ppaux.observer.endings import endings, foreign_signals, timers_left
from ppaux.observer.judge import Ending, Judge
from ppaux.observer.options import ObserverConfigError, ObserverOptions
from ppaux.observer.phrasing import cut
from ppaux.observer.protocol import REQUESTS_PER_RECORD, STOPS, Bounds
from ppaux.observer.target import LoadedObserver, TargetError, observer_from
from ppaux.replay import Impl, timeout_fault
from ppaux.report import Report, ReportBuilder
from ppaux.suggestions import RaiseLimit, Setting, limit_note

if TYPE_CHECKING:
    from ppaux.observer.child import ChildEnd
    from ppaux.replay import Wire

__all__ = [
    "CHECK_LIMITS",
    "ObserverConfigError",
    "ObserverOptions",
    "check_loaded",
    "check_observer",
    "observer_report",
]

#: The fields of :class:`~ppaux.limits.Limits` a check reads (what one description of a
#: target's value digests, how deep it walks, what its child may send): any other ``--limit``
#: would change nothing.
CHECK_LIMITS = (
    "max_batch_size",
    "max_steps",
    "max_vocab_size",
    "max_outputs",
    "max_digested_items",
    "max_value_nesting",
    "max_digested_elements",
    "max_record_bytes",
    "max_step_records",
    "max_run_record_bytes",
    "max_logits_elements",
)
#: The fields of :data:`CHECK_LIMITS` the child reads itself.
_CHILD_LIMITS = ("max_digested_items", "max_value_nesting", "max_digested_elements", "max_outputs")
#: Requests of the largest batch size that ``max_run_record_bytes`` is given for: a check of
#: larger batches takes a multiple of it. One record describes at most this many requests
#: (:data:`~ppaux.observer.protocol.REQUESTS_PER_RECORD`), whatever the batch size, and
#: ``max_record_bytes`` is its bound at any batch size.
_BOUND_REQUESTS = REQUESTS_PER_RECORD
#: What one record may cost once read: four times ``max_record_bytes``, and this per request
#: it may describe (a real record costs about 80 KB per request at batch 4096).
_COST_PER_REQUEST = 80 << 10


def _validate(options: ObserverOptions, limits: Limits) -> None:
    # The options hold members of the enums (ObserverOptions refuses anything else); every
    # transport and sender is a check's, and every implementation but both, which is replay's.
    if options.impl is Impl.BOTH:
        allowed = ", ".join(impl.value for impl in Impl if impl is not Impl.BOTH)
        raise ObserverConfigError("impl", options.impl.value, f"not one of {allowed}")
    if not options.batch_sizes or any(size < 1 for size in options.batch_sizes):
        raise ObserverConfigError(
            "batch_sizes", ",".join(map(str, options.batch_sizes)), "must be 1 or more"
        )
    if any(size > limits.max_batch_size for size in options.batch_sizes):
        most = limits.max_batch_size
        raise ObserverConfigError(
            "batch_sizes",
            ",".join(map(str, options.batch_sizes)),
            f"must be at most {most} {limit_note('max_batch_size', most)}",
        ).suggest(RaiseLimit("max_batch_size", most))
    if options.steps < 1:
        raise ObserverConfigError("steps", str(options.steps), "must be 1 or more")
    if options.steps > limits.max_steps:
        most = limits.max_steps
        raise ObserverConfigError(
            "steps", str(options.steps), f"must be at most {most} {limit_note('max_steps', most)}"
        ).suggest(RaiseLimit("max_steps", most))
    if options.vocab_size < 2:
        raise ObserverConfigError("vocab_size", str(options.vocab_size), "must be 2 or more")
    if options.vocab_size > limits.max_vocab_size:
        most = limits.max_vocab_size
        raise ObserverConfigError(
            "vocab_size",
            str(options.vocab_size),
            f"must be at most {most} {limit_note('max_vocab_size', most)}",
        ).suggest(RaiseLimit("max_vocab_size", most))
    most = limits.max_logits_elements
    if max(options.batch_sizes) * options.vocab_size > most:
        raise ObserverConfigError(
            "vocab_size",
            str(options.vocab_size),
            f"with a batch of {max(options.batch_sizes)} makes logits of more than {most} "
            f"elements {limit_note('max_logits_elements', most)}: give a smaller vocabulary "
            "or batch",
        ).suggest(RaiseLimit("max_logits_elements", most))
    fault = timeout_fault(options.timeout_s)
    if fault is not None:
        raise ObserverConfigError("timeout_s", str(options.timeout_s), fault)


def _judge(target: str, options: ObserverOptions, limits: Limits) -> Judge:
    return Judge(
        target,
        options.transport.value,
        options.impl.value,
        options.sender.value,
        tuple(options.batch_sizes),
        options.steps,
        limits=limits,
    )


#: The most bytes of the target's output a report's notes keep (the rest is counted).
MAX_OUTPUT_KEPT = 8192


def check_observer(
    target: str,
    options: ObserverOptions = ObserverOptions(),
    *,
    outputs: str | None = None,
    on_output: Callable[[bytes], None] | None = None,
    cwd: str | None = None,
    wire: Wire | None = None,
    limits: Limits = Limits(),
    report_path: str | None = None,
) -> Report:
    """Check the observer named by ``target`` (``module:attr`` or ``file.py:attr``) in a child
    process (see the module's docstring).

    ``outputs`` (``module:attr``, a zero-argument callable) gives the outputs to send instead
    of driving the observer. What the target prints goes to ``on_output`` as it comes; without
    one, its first :data:`MAX_OUTPUT_KEPT` bytes are the report's note. ``cwd`` is where the
    target runs (this process's current directory by default). ``wire``, an open wire shared
    by several checks, can only be used here: with one, the target runs in this process (as
    :func:`check_loaded` runs an object in hand) and its records are judged the same way.
    ``report_path``, the file the caller will write the report to, must be no module's file
    the target loaded: where it is, :class:`ObserverConfigError` (``output``) is raised.
    ``limits.max_digested_items`` and ``max_digested_elements`` bound what one description
    of a target's value digests (past them the value is listed as not compared, and the report's
    ``observer.limits_reached`` names the limit); ``limits.max_logits_elements`` bounds one
    step's logits (past it, :class:`ObserverConfigError` naming it, before anything runs).
    Raises :class:`TargetError` for a target that cannot be used and
    :class:`ObserverConfigError` for a setting that cannot work here; everything the target
    does wrong while it runs is a finding. A signal another process than the target's sends
    this one while the check runs is taken and said in the report (``observer.signals_from``,
    a note); the check goes on, so no process can end it before its verdict.
    """
    from ppaux.files import os_path
    from ppaux.observer.child import run_child
    from ppaux.observer.judge_loading import load_judge
    from ppaux.torch_probe import require_torch

    require_torch("check-observer")
    _validate(options, limits)
    if wire is not None:
        from ppaux.observer.target import load_observer, load_outputs

        given = load_outputs(outputs, limits.max_outputs) if outputs is not None else None
        loaded = load_observer(target, rank0_only=given is not None, timeout_s=options.timeout_s)
        return check_loaded(loaded, options, given, wire=wire, limits=limits)
    if not isinstance(target, str) or ":" not in target.strip(":"):
        from ppaux.observer.target import load_object

        load_object(str(target))  # raises the TargetError that says what a target looks like
    request = _request(target, options, outputs, cwd)
    if report_path is not None:
        _report_not_code(report_path)
        request["report"] = os_path(report_path)
    request["limits"] = {name: getattr(limits, name) for name in _CHILD_LIMITS}
    judge = _judge(target, options, limits)
    kept = _Kept()
    taken = _Taken(judge)
    load_judge()
    end = run_child(
        request,
        timeout_s=options.timeout_s,
        take=taken.take,
        on_output=on_output or kept.keep,
        bounds=_bounds(options, limits),
    )
    _judge_the_end(judge, end, taken, target, options.timeout_s)
    if taken.report_module is not None and report_path is not None:
        raise ObserverConfigError(
            "output",
            report_path,
            f"is the file of module {taken.report_module!r}, which the target imported; ppaux "
            "never writes over the target's code: give another output file",
        )
    report = judge.draft(kept.shown())
    foreign_signals(report, end)
    _rank0_forked(report, end)
    from ppaux.observer.release import release_note

    release_note(report, options, limits)
    return report.build()


def _report_not_code(path: str) -> None:
    """Refuse ``path`` for the report where it is a Python module's file already (the target
    may import it, and its process may be stopped before it says which it imported)."""
    import importlib.machinery
    import os

    if os.path.isfile(path) and path.endswith(tuple(importlib.machinery.all_suffixes())):
        raise ObserverConfigError(
            "output",
            path,
            "is a Python module's file, which the target may import; ppaux never writes over "
            "code: give another output file",
        )


def _bounds(options: ObserverOptions, limits: Limits) -> Bounds:
    """What the parent takes from the child of a check of ``options`` (see :mod:`.protocol`):
    a record's bounds are the same at any batch size (a record describes at most
    :data:`_BOUND_REQUESTS` requests), the run's are per that many of the largest batch."""
    from ppaux.limits import LARGEST
    from ppaux.observer.framing import MAX_FRAME

    times = -(-max(options.batch_sizes) // _BOUND_REQUESTS)
    return Bounds(
        record_bytes=("max_record_bytes", min(limits.max_record_bytes, MAX_FRAME - 1)),
        record_cost=min(
            limits.max_record_bytes * 4
            + min(max(options.batch_sizes), _BOUND_REQUESTS) * _COST_PER_REQUEST,
            LARGEST,
        ),
        step_records=("max_step_records", limits.max_step_records),
        run_bytes=("max_run_record_bytes", min(limits.max_run_record_bytes * times, LARGEST)),
        batch_sizes=tuple(options.batch_sizes),
        steps=options.steps,
        most_given=limits.max_outputs,
    )


class _Kept:
    """The target's output as a report's note keeps it: its first :data:`MAX_OUTPUT_KEPT`
    bytes, the rest counted."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.dropped = 0

    def keep(self, data: bytes) -> None:
        room = max(MAX_OUTPUT_KEPT - len(self.kept), 0)
        self.kept.extend(data[:room])
        self.dropped += max(len(data) - room, 0)

    def shown(self) -> str:
        text = self.kept.decode("utf-8", "replace")
        return text + f"\n[... {self.dropped} more bytes]" if self.dropped else text


class _Taken:
    """The child's records as they come: each judged, and kept aside where it stops the check
    (``stops``) or names the timers the child left running (``timers``)."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.stops: list[dict[str, Any]] = []
        self.timers: list[tuple[str, float]] = []
        #: The module the child loaded from the report's file, if any.
        self.report_module: str | None = None

    def take(self, message: dict[str, Any]) -> None:
        """Judge one record, its fields and its place in the order already checked
        (:mod:`.protocol`)."""
        event = message["event"]
        if event in STOPS:
            self.stops.append(message)
        if event == "end":
            self.timers.extend((name[:20], float(left)) for name, left in message["timers"][:8])
            self.report_module = message.get("report_module")
        self.judge.take(message)


def _judge_the_end(
    judge: Judge, end: ChildEnd, taken: _Taken, target: str, timeout_s: float
) -> None:
    """What stopped the check and how the child ended, told to ``judge`` (a record that
    stops the check with an error raises it here)."""
    for stop in taken.stops:
        _stopped(stop, target, judge)
    defaults = Limits()
    lowered = {
        name: getattr(defaults, name)
        for name in CHECK_LIMITS
        if getattr(judge.limits, name) < getattr(defaults, name)
    }
    for ending in endings(end, timeout_s, end.hook, lowered):
        judge.ended(ending)
    if taken.timers:
        judge.ended(timers_left(taken.timers))
    if not judge.start and not judge.endings:
        # Its records ended well, but none said the check began: not the check's records.
        judge.ended(
            Ending(
                "garbled",
                "the target's process ended its records without the check's start: what it "
                "sent was not the check's",
            )
        )


def _rank0_forked(report: ReportBuilder, end: ChildEnd) -> None:
    """The note of a check whose child forked rank 0's process (the test suite's hook, or a
    fresh interpreter that could not start): it shares the child's string hash seed."""
    if end.rank0_forked is None:
        return
    from ppaux.observer.fresh import FORK_HOOK
    from ppaux.observer.handnotes import forked_note

    hint = f"unset {FORK_HOOK} to check with rank 0 in a fresh interpreter"
    hook = FORK_HOOK in end.rank0_forked
    note = forked_note(end.rank0_forked, "the check's child process", hint if hook else "")
    report.notes.extend([] if note is None else [note])


def _request(
    target: str, options: ObserverOptions, outputs: str | None, cwd: str | None
) -> dict[str, Any]:
    """What the child is asked to do (JSON): the target, the outputs, the options, this
    process's import path and where to run."""
    import os
    import sys

    return {
        "target": target,
        "outputs": outputs,
        "options": options.to_json(),
        "path": [entry for entry in sys.path if isinstance(entry, str) and entry],
        "cwd": os.path.abspath(cwd if cwd is not None else os.getcwd()),
    }


def _stopped(stop: dict[str, Any], target: str, judge: Judge) -> None:
    """A record of the child's that stops the check: the error it raises here (a target that
    cannot be used, a setting that cannot work), or a finding (SystemExit outside the methods
    driven)."""
    event = stop["event"]
    if event == "target_error":
        raise TargetError(cut(stop.get("target")), cut(stop.get("reason")))
    if event == "config_error":
        raise ObserverConfigError(
            cut(stop.get("option")), cut(stop.get("value")), cut(stop.get("reason"))
        ).suggest(*_settings(stop.get("settings")))
    if event == "failed":
        raise ObserverConfigError("target", target, cut(stop.get("text")))
    if event == "target_raised":
        judge.ended(
            Ending(
                "exit",
                f"its code raised {cut(stop.get('text'))} while it was checked, outside "
                "the methods the check drives",
                _location(stop.get("location")),
            )
        )
    if event == "target_exit":
        code = stop.get("code")
        judge.ended(
            Ending(
                "exit",
                f"its code raised SystemExit{'' if code is None else ': ' + cut(code)} "
                "while it was checked, outside the methods the check drives",
            )
        )


def _location(where: object) -> dict[str, Any] | None:
    """A location the child sent (``{"file", "line", "function"}``), or None."""
    if not isinstance(where, dict) or not isinstance(where.get("line"), int):
        return None
    return {
        "file": str(where.get("file"))[:1000],
        "line": where["line"],
        "function": str(where.get("function"))[:200],
    }


def check_loaded(
    loaded: LoadedObserver,
    options: ObserverOptions,
    outputs: Iterable[Any] | None = None,
    *,
    wire: Wire | None = None,
    limits: Limits = Limits(),
) -> Report:
    """The check of an observer already in hand, run in this process (``assert_pp_safe``):
    the same records as the child's, judged the same way.

    ``wire`` is an open :class:`~ppaux.replay.Wire` of ``options.transport`` to send through
    (left open, so that several checks share one receiving process); None opens one and closes
    it at the end.
    """
    _validate(options, limits)
    if wire is not None and getattr(wire, "transport", None) != options.transport.value:
        raise ObserverConfigError(
            "transport", options.transport.value, f"the wire given is {wire.transport!r}"
        )
    from ppaux.observer.handcheck import run_in_hand
    from ppaux.observer.handguard import hand_guard
    from ppaux.observer.handnotes import hand_notes
    from ppaux.observer.judge_loading import load_judge

    judge = _judge(loaded.target, options, limits)
    # Rank 0's fresh process imports the target's module again, whose code can write ppaux's
    # own files: every module the judge and the report need is loaded before it starts.
    load_judge()
    notes = [*loaded.notes]
    # Rank 0's processes cannot end this one, and what they leave running is ended.
    with hand_guard() as guard:
        how = run_in_hand(loaded, options, outputs, wire, limits, judge, notes, guard)
    for ending in guard.endings():
        judge.ended(ending)
    report = judge.draft()
    foreign_signals(report, guard)
    report.notes.extend([*hand_notes(how, loaded.same_rank0, loaded.kind), *notes])
    return report.build()


def observer_report(
    observer: object, options: ObserverOptions, outputs: Sequence[Any] | None
) -> Report:
    """The check of an observer object (instance, class or factory) in hand."""
    name = getattr(observer, "__qualname__", None) or type(observer).__qualname__
    return check_loaded(
        observer_from(observer, name, timeout_s=options.timeout_s), options, outputs
    )


def _settings(sent: object) -> list[Setting]:
    """The settings a child's setting error suggested, from its record (strings only, a few)."""
    if not isinstance(sent, list):
        return []
    return [
        Setting(str(name)[:100], None if value is None else str(value)[:200], str(what)[:200])
        for name, value, what in (s for s in sent[:8] if isinstance(s, list) and len(s) == 3)
    ]
