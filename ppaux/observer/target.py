"""Loading what ``ppaux check-observer`` checks: ``module:attr`` or ``path/to/file.py:attr``.

The target names a sampling observer instance, a class or a zero-argument factory. Loading it
imports the module or runs the file, as pytest does with test modules: the target's own code
runs, on purpose. Every way it can fail becomes one :class:`TargetError` naming the target and
the cause.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ppaux.errors import PpauxError, path_shown
from ppaux.observer.drive import INTERRUPTS, message_line
from ppaux.text import with_article

__all__ = [
    "LoadedObserver",
    "TargetError",
    "load_object",
    "load_observer",
    "load_outputs",
    "observer_from",
    "target_files",
]

#: What an observer must have for sglang's model runner to drive it.
OBSERVER_METHODS = ("is_active", "before_grammar", "after_sample")


class TargetError(PpauxError, ValueError):
    """A target that cannot be used: ``target`` as given, ``reason`` why; ``str()`` is
    '<target>: <reason>', the target quoted as an error line quotes a path
    (:func:`ppaux.errors.path_shown`)."""

    def __init__(self, target: str, reason: str) -> None:
        super().__init__(f"{path_shown(target)}: {reason}")
        self.target = target
        self.reason = reason


@dataclass(frozen=True)
class LoadedObserver:
    """The observer to drive, how rank 0's observer is made, and where it came from.

    ``kind`` is 'instance', 'class' or 'factory'; ``make_rank0`` builds the observer that pops on
    rank 0 (a separate process in sglang: a fresh instance from a class or factory, a deep copy
    of an instance taken before any step ran); ``origin`` is the file that defines it;
    ``same_rank0``: why rank 0 pops with the very instance the last stage runs (one that cannot
    be deep-copied), else None; ``given``: the class or factory given in hand (None for an
    instance, or a target loaded by name).
    """

    target: str
    observer: Any
    kind: str
    make_rank0: Callable[[], Any]
    origin: str | None
    same_rank0: str | None = None
    given: Any = None
    #: Why the check cannot start: copying the instance given did not end in time
    #: (:func:`~ppaux.observer.handcopy.stuck`), else None.
    stuck: str | None = None
    #: The report's notes about what ppaux's own copying did to the instance given.
    notes: tuple[str, ...] = ()


def _split(target: str) -> tuple[str, str]:
    module, sep, attr = target.rpartition(":")
    if not sep or not module or not attr:
        raise TargetError(
            target, "expected module:attr or path/to/file.py:attr (a colon, then a name)"
        )
    if ":" in module and not module.endswith(".py") and not os.path.isfile(module):
        # No module name holds a colon: a second one ('file.py:Obs:x'), not a missing module.
        raise TargetError(
            target,
            f"{module!r} is neither a module name nor a .py file: a target takes one colon, "
            "before the name (module:attr or path/to/file.py:attr; an attribute of it is "
            "named with a dot, module:Outer.inner)",
        )
    return module, attr


def _first_line(exc: BaseException) -> str:
    text = message_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _where(exc: BaseException) -> str:
    """' (at FILE:LINE)' for the innermost frame outside importlib, or ''."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if "importlib" not in f.filename
        and "<frozen" not in f.filename
        and os.path.abspath(f.filename) != os.path.abspath(__file__)
    ]
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def _import_file(target: str, path: str) -> Any:
    if not os.path.exists(path):
        raise TargetError(target, f"no such file {path_shown(path)}")
    if not os.path.isfile(path):
        raise TargetError(target, f"{path_shown(path)} is not a file")
    # The file's directory goes at the end of the path, so that it can import its neighbours
    # but never shadows the standard library or ppaux (a neighbour json.py or html.py is not
    # what 'import json' finds). It is the real file's, as Python puts a script's on its path:
    # a target reached through a link imports the neighbours of the file it links to.
    directory = os.path.dirname(os.path.realpath(path))
    if directory not in sys.path:
        sys.path.append(directory)
    # One module per file: a file already run (the target's own, given again to --outputs,
    # or one a neighbour imported) is not run a second time under another name.
    loaded = _module_of_file(path)
    if loaded is not None:
        return loaded
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(target, f"{path_shown(path)} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered so that dataclasses and pickle find it.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise TargetError(
            target,
            f"cannot run {path_shown(path)}: SyntaxError: {exc.msg}"
            + (f" (line {exc.lineno})" if exc.lineno is not None else ""),
        ) from None
    except INTERRUPTS.failures as exc:  # anything the file raises while it runs
        sys.modules.pop(name, None)
        raise TargetError(
            target, f"running {path_shown(path)} raised {_first_line(exc)}{_where(exc)}"
        ) from None
    return module


def _same_file(a: str | None, b: str) -> bool:
    try:
        return a is not None and os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _module_of_file(path: str) -> Any:
    """The module in ``sys.modules`` that ran ``path``, if one did."""
    for module in list(sys.modules.values()):
        if _same_file(getattr(module, "__file__", None), path):
            return module
    return None


def _module_name(path: str) -> str:
    """The name ``path`` runs under: the one ``import`` finds it by, so that a neighbour that
    imports it later gets this module; else a name of ppaux's own (a file that ``import``
    would not find, or whose name is another module's, such as a neighbour ``json.py``)."""
    import importlib.machinery

    stem = os.path.splitext(os.path.basename(path))[0]
    if stem.isidentifier() and stem not in sys.modules:
        try:
            spec = importlib.machinery.PathFinder.find_spec(stem)
        except (ImportError, ValueError, OSError):
            spec = None
        if spec is not None and _same_file(spec.origin, path):
            return stem
    return "_ppaux_target_" + stem.replace("-", "_")


def _cwd_hint(missing: str) -> str:
    """Why a module that sits in the current directory is not found: ``ppaux`` runs as a
    console script, so (unlike ``python -m``) the current directory is not on the import path."""
    top = missing.partition(".")[0]
    here = os.getcwd()
    if here in sys.path or "" in sys.path:
        return ""
    if not (
        os.path.isdir(os.path.join(here, top)) or os.path.isfile(os.path.join(here, f"{top}.py"))
    ):
        return ""
    return (
        f" ({top!r} is in the current directory, which is not on the import path: "
        "install the package (pip install -e .) or name the file, path/to/file.py:attr)"
    )


def _file_hint(name: str) -> str:
    """Why a file named as a module is not run: only a ``.py`` file is taken as a file."""
    if not os.path.isfile(name):
        return ""
    return (
        f" ({name!r} is a file, but only a .py file is taken as one: a target is module:attr "
        "or path/to/file.py:attr)"
    )


def _import_module(target: str, name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or name
        if missing == name or name.startswith(missing + "."):
            hint = _file_hint(name) or _cwd_hint(missing)
            raise TargetError(target, f"no module named {missing!r}{hint}") from None
        raise TargetError(
            target, f"importing {name!r} failed: no module named {missing!r}{_where(exc)}"
        ) from None
    except INTERRUPTS.failures as exc:  # anything the module raises while it runs
        raise TargetError(
            target, f"importing {name!r} raised {_first_line(exc)}{_where(exc)}"
        ) from None


def _looks_like_file(module_part: str) -> bool:
    return module_part.endswith(".py") or os.sep in module_part or "/" in module_part


def target_files(target: str) -> list[str]:
    """The files that ``target`` (``module:attr`` or ``file.py:attr``) reads, found without
    running anything: the file it names, or the module's source file as the import path
    locates it. A command refuses to write its report over any of them."""
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        return []
    if _looks_like_file(module_part):
        return [module_part]
    parts = module_part.split(".")
    if not all(part.isidentifier() for part in parts):
        return []
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        base = os.path.join(entry or ".", *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return [candidate]
    return []


def load_object(target: str) -> Any:
    """The object ``target`` names (importing the module or running the file it names).

    ``attr`` may be dotted (``module:Outer.inner``). Raises :class:`TargetError`.
    """
    module_part, attr = _split(target)
    module = (
        _import_file(target, module_part)
        if _looks_like_file(module_part)
        else _import_module(target, module_part)
    )
    value: Any = module
    for part in attr.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            where = module_part if value is module else f"{module_part}:{attr}"
            raise TargetError(target, f"{where} has no attribute {part!r}") from None
        except INTERRUPTS.failures as exc:  # a property or module __getattr__ that raises
            raise TargetError(target, f"reading {part!r} raised {_first_line(exc)}") from None
    return value


def _a_type(value: object) -> str:
    """``value``'s type after 'a' or 'an': 'an int', 'a list', 'an object'."""
    return with_article(type(value).__name__)


def _call(target: str, factory: Callable[[], Any], what: str) -> Any:
    try:
        return factory()
    except TypeError as exc:
        try:
            inspect.signature(factory).bind()
        except (TypeError, ValueError):
            raise TargetError(
                target, f"{what} cannot be called without arguments ({_first_line(exc)})"
            ) from None
        raise TargetError(
            target, f"calling {what} raised {_first_line(exc)}{_where(exc)}"
        ) from None
    except INTERRUPTS.failures as exc:  # the target's own failure
        raise TargetError(
            target, f"calling {what} raised {_first_line(exc)}{_where(exc)}"
        ) from None


def _origin(value: object) -> str | None:
    """The file that defines ``value`` (a class or function) or an instance's class."""
    subject = value if inspect.isclass(value) or inspect.isroutine(value) else type(value)
    try:
        return inspect.getsourcefile(subject)
    except (TypeError, OSError):  # a class of __main__ under python -c, or of a notebook
        return None
    except INTERRUPTS.failures:  # a metaclass or descriptor of the target's that raises
        return None


def load_observer(
    target: str, *, rank0_only: bool = False, timeout_s: float | None = None
) -> LoadedObserver:
    """Load ``target`` and make the observer to drive; raises :class:`TargetError`.

    An instance (anything with ``is_active``, ``before_grammar`` and ``after_sample``) is used as
    it is; a class or any other callable is called without arguments and must return one. With
    ``rank0_only`` (the outputs are given, so only rank 0's pop calls it), ``from_pp_tensors``
    is all it needs, as sglang's pop calls nothing else. An instance's deep copy for rank 0 is
    bounded by ``timeout_s`` as :func:`observer_from` bounds it (None: unbounded, where the
    caller's own clock bounds the whole process: the check's child).
    """
    from ppaux.observer.handcopy import Stuck, in_time

    try:  # its module's import is the target's code: bounded as its methods are
        value = in_time(lambda: load_object(target), timeout_s, "importing the target")
    except Stuck as exc:
        return LoadedObserver(target, None, "class", lambda: None, None, stuck=_import_hung(exc))
    return observer_from(value, target, rank0_only=rank0_only, timeout_s=timeout_s)


def _import_hung(exc: Exception) -> str:
    """What the finding of a target whose import did not end in time (``exc``, a
    :class:`~ppaux.observer.handcopy.Stuck`) says."""
    return (
        f"importing the target (its module's code, run in the checking process) did not end "
        f"within the check's timeout ({getattr(exc, 'timeout_s', 0):g} s): it hangs at import; "
        "no step ran, and its thread is left waiting (a daemon thread, which cannot be "
        "stopped); give the target and its outputs by name to check it in a process of its "
        "own, which is killed with its process group when it hangs"
    )


def observer_from(
    value: object, target: str, *, rank0_only: bool = False, timeout_s: float | None = None
) -> LoadedObserver:
    """:class:`LoadedObserver` for an object already in hand (``assert_pp_safe``'s way in).

    An instance is deep-copied for rank 0 here, by its own methods (:mod:`.handcopy`): within
    ``timeout_s`` seconds (None: unbounded), else the :class:`LoadedObserver` says it is
    ``stuck``; attributes the copying changed on the instance are put back, and its ``notes``
    say which."""
    methods = ("from_pp_tensors",) if rank0_only else OBSERVER_METHODS

    def _is_observer(value: object) -> bool:
        return all(callable(getattr(value, name, None)) for name in methods)

    def _missing(value: object) -> str:
        return ", ".join(name for name in methods if not callable(getattr(value, name, None)))

    if _is_observer(value) and not inspect.isclass(value):
        import copy

        from ppaux.observer.handcopy import Stuck, changed_note, in_time, kept_as_given, stuck

        same: str | None = "its deep copy is the instance itself"
        changed: list[str] = []
        try:
            spare, changed = kept_as_given(
                lambda: in_time(
                    lambda: copy.deepcopy(value), timeout_s, "deep-copying the instance"
                ),
                value,
            )
        except Stuck as exc:
            return LoadedObserver(
                target, value, "instance", lambda: value, _origin(value), stuck=stuck(exc)
            )
        except INTERRUPTS.failures as exc:  # an observer that cannot be copied pops with itself
            spare = value
            same = f"it cannot be deep-copied ({type(exc).__name__}: {message_line(exc)})"
        notes = (changed_note(changed, "deep-copying"),) if changed else ()
        made = [False]

        def rank0() -> Any:
            if made[0]:
                return copy.deepcopy(spare) if spare is not value else value
            made[0] = True
            return spare

        return LoadedObserver(
            target,
            value,
            "instance",
            rank0,
            _origin(value),
            same if spare is value else None,
            notes=notes,
        )
    if not callable(value):
        raise TargetError(
            target,
            f"is {_a_type(value)}, not a sampling observer, a class or a factory "
            f"(it lacks {_missing(value)})",
        )
    kind = "class" if inspect.isclass(value) else "factory"
    what = f"the {kind} {getattr(value, '__qualname__', target)}"
    observer = _call(target, value, what)
    if not _is_observer(observer):
        raise TargetError(
            target,
            f"calling {what} gave {_a_type(observer)}, which is not a sampling observer: "
            f"it lacks {_missing(observer)}",
        )

    def fresh() -> Any:
        return _call(target, value, what)

    return LoadedObserver(target, observer, kind, fresh, _origin(value), given=value)


def load_outputs(target: str, most: int | None = None) -> Iterator[Any]:
    """The auxiliary outputs named by ``--outputs module:attr``: a zero-argument callable
    returning one output or an iterable of them. Raises :class:`TargetError`.

    They come one at a time, as the steps take them: a generator makes each output only when
    its step runs, so memory holds one output, not all of them. The first is read here (no
    outputs at all raises here); a later item that is not an output, an iterable that raises
    part way or one that yields more than ``most`` (``Limits.max_outputs``, its default) raises
    as the steps reach it.
    """
    from ppaux.limits import Limits

    most = Limits().max_outputs if most is None else most
    value = load_object(target)
    if not callable(value):
        raise TargetError(target, f"is {_a_type(value)}, not a zero-argument callable")
    produced = _call(target, value, f"{getattr(value, '__qualname__', target)}")
    if hasattr(produced, "copy_to_host"):
        return iter([produced])
    try:
        iterator = iter(produced)
    except TypeError:
        raise TargetError(
            target,
            f"returned {_a_type(produced)}: neither an auxiliary output (no "
            "copy_to_host) nor an iterable of them",
        ) from None
    first = _next_output(target, iterator, 0, most)
    if first is _NO_MORE:
        raise TargetError(target, "returned no outputs")
    return _streamed(target, first, iterator, most)


#: What :func:`_next_output` returns once the iterable is exhausted.
_NO_MORE = object()


def _streamed(target: str, first: object, iterator: Iterator[Any], most: int) -> Iterator[Any]:
    """``first``, then each further output of ``iterator`` as it is asked for, counted."""
    yield first
    index = 1
    while (output := _next_output(target, iterator, index, most)) is not _NO_MORE:
        yield output
        index += 1


def _next_output(target: str, iterator: Iterator[Any], index: int, most: int) -> Any:
    """Item ``index`` of the target's iterable, checked (at most ``most`` of them);
    :data:`_NO_MORE` past its end."""
    try:
        output = next(iterator)
    except StopIteration:
        return _NO_MORE
    except INTERRUPTS.failures as exc:  # a generator of the target's that fails part way
        raise TargetError(
            target, f"iterating what it returned raised {_first_line(exc)}{_where(exc)}"
        ) from None
    if index >= most:
        # Bounded: an endless generator would otherwise run for ever.
        from ppaux.suggestions import limit_note

        raise TargetError(
            target,
            f"yields more than {most} outputs (an endless generator?) "
            f"{limit_note('max_outputs', most)}; give fewer",
        )
    if output is not None and not hasattr(output, "copy_to_host"):
        raise TargetError(
            target,
            f"item {index} is {_a_type(output)}, not an auxiliary output (no copy_to_host)",
        )
    return output
