"""Checks for an integration's own test suite: is this sampling observer PP-safe?

A sampling observer's ``to_pp_tensors`` and ``from_pp_tensors`` never run on one GPU, so a
PP=1 test suite cannot catch what breaks in a pipeline-parallel deployment.
:func:`assert_pp_safe` drives the observer as sglang does and sends each output down the
single-stage and the PP paths (``ppaux check-observer`` in a function)::

    from ppaux.testing import assert_pp_safe
    from my_integration import EntropyObserver

    def test_entropy_observer_is_pp_safe():
        assert_pp_safe(EntropyObserver)

With ppaux installed, pytest also offers the fixture ``pp_safe`` (the same function, from the
``ppaux`` plugin registered under the ``pytest11`` entry point; it does nothing unless a test
asks for it). Imports torch when called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ppaux.text import shown

if TYPE_CHECKING:
    from ppaux.limits import Limits
    from ppaux.report import Finding, Report

__all__ = [
    "LeftRunningWarning",
    "NotComparedWarning",
    "NothingCheckedWarning",
    "RankZeroNotApartWarning",
    "assert_pp_safe",
    "pp_safety_report",
]


class NothingCheckedWarning(UserWarning):
    """:func:`assert_pp_safe` passed, but the observer produced no output to check (PP714):
    give ``outputs=``, or make it active for the stand-in ``sampling_info``."""


class NotComparedWarning(UserWarning):
    """:func:`assert_pp_safe` passed, but some values were past the limits and not compared
    (PP716): raise them with ``limits=Limits(...)``, or give ``strict=True`` to fail on it."""


class LeftRunningWarning(UserWarning):
    """:func:`assert_pp_safe` passed, but the target left a thread or a process running after
    the last step (PP718, the warning ``check-observer`` prints): join it, or give
    ``ignore=["PP718"]`` where it is meant to run for the server's life."""


class RankZeroNotApartWarning(UserWarning):
    """:func:`assert_pp_safe` passed, but rank 0's side did not run apart as sglang's does (a
    copy forked from this process, sharing its string hash seed, or this process): the
    report's note says what it could not see, and how to check it (give the target by name).
    An instance carried to a fresh interpreter ran apart: its note is no warning."""


#: The warnings a passing :func:`assert_pp_safe` warns of, with the warning: the "could not
#: check" findings, and what the target left running (as ``check-observer`` shows it).
_UNCHECKED: tuple[tuple[str, type[UserWarning]], ...] = (
    ("PP714", NothingCheckedWarning),
    ("PP716", NotComparedWarning),
    ("PP718", LeftRunningWarning),
)


_RANK = {"info": 1, "warning": 2, "error": 3}


def pp_safety_report(
    observer: object,
    *,
    outputs: Sequence[Any] | Callable[[], Iterable[Any]] | None = None,
    transport: str = "wire",
    impl: str = "reference",
    sender: str = "validating",
    batch_sizes: Sequence[int] = (1, 4),
    steps: int = 3,
    vocab_size: int = 32,
    device: str = "cpu",
    sglang_path: str | None = None,
    timeout_s: float = 60.0,
    limits: Limits | None = None,
) -> Report:
    """The report ``ppaux check-observer`` would print, for an observer in hand.

    ``observer`` is an observer instance, a class or a zero-argument factory, or a target
    string (``module:attr``, ``file.py:attr``). ``outputs`` (a sequence of
    ``DeviceAuxiliaryOutput`` or a zero-argument callable returning them) is sent instead of
    driving the observer. ``limits`` (a :class:`~ppaux.limits.Limits`) raises the bounds on
    what is compared, as ``--limit`` does. The other arguments are the CLI's options. Raises
    :class:`~ppaux.observer.TargetError` or :class:`~ppaux.observer.ObserverConfigError` for
    what cannot be checked at all.
    """
    from ppaux.limits import Limits
    from ppaux.observer import ObserverOptions, check_loaded, check_observer, observer_from
    from ppaux.torch_probe import require_torch

    require_torch("ppaux.testing")
    options = ObserverOptions(
        # Members or their values: ObserverOptions takes either and stores the members.
        transport=transport,  # type: ignore[arg-type]
        impl=impl,  # type: ignore[arg-type]
        sender=sender,  # type: ignore[arg-type]
        batch_sizes=tuple(batch_sizes),
        steps=steps,
        vocab_size=vocab_size,
        device=device,
        sglang_path=sglang_path,
        timeout_s=timeout_s,
    )
    bounds = Limits() if limits is None else limits
    by_name = issubclass(type(observer), str)  # isinstance would read a __class__ property
    if by_name and outputs is None:
        # A target by name runs in a child process of its own, as with check-observer.
        return check_observer(cast(str, observer), options, limits=bounds)
    if by_name:
        from ppaux.observer import load_observer

        loaded = load_observer(cast(str, observer), rank0_only=True, timeout_s=options.timeout_s)
    else:
        name = _name_of(observer)
        loaded = observer_from(
            observer, name, rank0_only=outputs is not None, timeout_s=options.timeout_s
        )
    # An object in hand runs here; its records are judged as the child's are.
    given = list(outputs()) if callable(outputs) else outputs
    return check_loaded(loaded, options, given, limits=bounds)


def _name_of(observer: object) -> str:
    """The observer's name for the report: its ``__qualname__``, or its class's, read without
    trusting either (a ``__class__`` property or a metaclass may raise on it)."""
    if issubclass(type(observer), str):
        return str(observer)
    for subject in (observer, type(observer)):
        try:
            name = (
                type.__getattribute__(subject, "__qualname__")
                if isinstance(subject, type)
                else getattr(subject, "__qualname__", None)
            )
        except Exception:  # the observer's own attribute code raised
            continue
        if isinstance(name, str) and name:
            return name
    return "<observer>"


def _in_hand_failure(observer: object, exc: Exception, options: dict[str, Any]) -> str:
    """The failure message for an exception out of a check of an observer in hand: raised in
    the observer's own code (PP710, at its line), or in ppaux's after the observer's code ran
    in this process and changed what ppaux uses (PP715)."""
    import os
    import sysconfig
    import traceback

    from ppaux.report import Location, Report, finding

    name = _name_of(observer)
    # The deepest frame of the observer's own code: outside ppaux and the installed libraries.
    libraries = {sysconfig.get_path(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    libraries.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    own = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not any(os.path.abspath(frame.filename).startswith(p + os.sep) for p in libraries if p)
    ]
    last = own[-1] if own else None
    try:
        text = str(exc).splitlines()[0] if str(exc) else ""
    except Exception:  # an exception whose own __str__ raises
        text = ""
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if last is not None:
        found = finding(
            "PP710/raised-reading",
            name,
            f"its code raised {line} while ppaux read the observer it was given",
            location=Location(last.filename, last.lineno or 1, last.name),
        )
    else:
        found = finding(
            "PP715/check-raised",
            name,
            f"ppaux's check raised {line} in this process after the observer's code ran here: "
            "the observer changed something the check uses (a builtin, json, torch); give it "
            "by name ('module:attr') to check it in a process of its own",
        )
    try:
        report = Report("check-observer", findings=(found,), data={"observer": {"target": name}})
        return _describe(report, [found], options)
    except Exception:  # the observer's code replaced ppaux's own functions in this process
        return (
            f"sampling observer {name} is not PP-safe: ppaux's check raised {line} in this "
            "process after the observer's code ran here, and its finding could not be written: "
            "the observer changed ppaux's own functions; give it by name ('module:attr') to "
            "check it in a process of its own"
        )


def _exited(observer: object, exc: SystemExit) -> AssertionError:
    """sys.exit() in the observer's code, where no driven method reports it, as a failure of
    the test rather than the end of the test run."""
    name = _name_of(observer)
    code = "" if exc.code is None else f": {exc.code}"
    return AssertionError(
        f"sampling observer {name} is not PP-safe: its code "
        f"raised SystemExit{code} while ppaux checked it (sys.exit() ends the process it runs "
        "in: in sglang, the scheduler)"
    )


def _describe(report: Report, failing: list[Finding], options: dict[str, Any]) -> str:
    target = report.data.get("observer", {}).get("target", "?")
    count = len(failing)
    head = (
        f"sampling observer {target} is not PP-safe: {count} finding{'s' if count != 1 else ''} "
        f"(transport {options['transport']}, impl {options['impl']}, sender {options['sender']})"
    )
    lines = [head]
    for item in failing:
        where = f" [{item.key}]" if item.key else ""
        lines.append(f"  {item.code} {item.severity.value}{where}: {item.message}")
        location = item.location
        if location is not None and location.file:
            lines.append(f"      at: {location.file}:{location.line} in {location.function}")
        if item.sglang_error:
            lines.append(f"      sglang raises: RuntimeError: {item.sglang_error}")
        fix = item.worded()  # the fix, with any setting to give as a keyword argument
        if fix:
            lines.append(f"      fix: {fix}")
    lines.append("  ('ppaux explain CODE' tells more about each code and how to fix it.)")
    # The assertion's text is where these findings are rendered: each line shown escaped (a
    # key or message may hold any character the observer or a file gave it).
    return "\n".join(shown(line, None) for line in lines)


def assert_pp_safe(
    observer: object,
    *,
    outputs: Sequence[Any] | Callable[[], Iterable[Any]] | None = None,
    transport: str = "wire",
    impl: str = "reference",
    sender: str = "validating",
    batch_sizes: Sequence[int] = (1, 4),
    steps: int = 3,
    vocab_size: int = 32,
    device: str = "cpu",
    sglang_path: str | None = None,
    timeout_s: float = 60.0,
    fail_on: str = "error",
    ignore: Iterable[str] = (),
    strict: bool = False,
    limits: Limits | None = None,
) -> Report:
    """Raise ``AssertionError`` when ``observer`` is not PP-safe; return the report otherwise.

    Arguments as for :func:`pp_safety_report`; ``fail_on`` is the lowest severity that fails
    ('error', 'warning' or 'info') and ``ignore`` lists codes to leave out. ``strict``, as
    ``check-observer --strict``, makes every "could not check" finding an error: a value past
    the limits (PP716), no output to check at all (PP714). The report returned is the one
    judged (with ``strict``, those findings raised to errors). The message lists
    each finding with its code, the entry at fault, sglang's own message where sglang raises
    one, and the fix.
    """
    __tracebackhide__ = True  # pytest shows the assertion, not ppaux's frames
    if fail_on not in _RANK:
        raise ValueError(f"fail_on {fail_on!r}: not one of error, warning, info")
    from ppaux.errors import PpauxError

    try:
        report = pp_safety_report(
            observer,
            outputs=outputs,
            transport=transport,
            impl=impl,
            sender=sender,
            batch_sizes=batch_sizes,
            steps=steps,
            vocab_size=vocab_size,
            device=device,
            sglang_path=sglang_path,
            timeout_s=timeout_s,
            limits=limits,
        )
    except PpauxError as exc:
        # An unusable target or option is one line in pytest's report, like a finding: its
        # message names the target and the cause; ppaux's frames below would only hide it.
        raise exc.with_traceback(None) from None
    except SystemExit as exc:
        # ppaux never exits: the observer's own sys.exit() (or its outputs factory's), outside
        # the methods that the check reports one by one, must not end the test run.
        raise _exited(observer, exc) from None
    except Exception as exc:  # turned into the test's failure below
        if issubclass(type(observer), str) and outputs is None:
            raise  # checked in a process of its own: nothing of the target's ran here
        options = {"transport": transport, "impl": impl, "sender": sender}
        raise AssertionError(_in_hand_failure(observer, exc, options)) from None
    if strict:
        from ppaux.report import Gate

        report = Gate(strict=True).apply(report)
    skipped = {code.strip().upper() for code in ignore}
    failing = [
        item
        for item in report.findings
        if _RANK[item.severity.value] >= _RANK[fail_on] and item.code not in skipped
    ]
    if failing:
        raise AssertionError(
            _describe(report, failing, {"transport": transport, "impl": impl, "sender": sender})
        )
    _warn_unchecked(report, skipped)
    _warn_not_apart(report)
    return report


def _warn_not_apart(report: Report) -> None:
    """Warn, at the line of the test that called :func:`assert_pp_safe`, of each note of a
    passing report that says what rank 0's side could not see (pytest lists it)."""
    import warnings

    from ppaux.observer import unseen_notes

    for note in unseen_notes(list(report.notes)):
        warnings.warn(RankZeroNotApartWarning(note), stacklevel=3)


def _warn_unchecked(report: Report, skipped: set[str]) -> None:
    """Warn, at the line of the test that called :func:`assert_pp_safe`, of each "could not
    check" finding of a passing report that ``ignore`` does not leave out."""
    for code, category in _UNCHECKED:
        unchecked = [item for item in report.findings if item.code == code]
        if unchecked and code not in skipped:
            import warnings

            # A test that checked nothing, or left values uncompared, must not pass unnoticed:
            # pytest lists this warning.
            said = shown(f"{unchecked[0].path}: {unchecked[0].message} ({code})", None)
            warnings.warn(category(said), stacklevel=3)
