"""Capture the tensor dict of a failing PP transport call from a running sglang, to a file.

sglang's pipeline-parallel auxiliary transport is two functions in
``sglang.srt.sampling.sampling_observer_pp`` (0.5.19 and later): the last stage calls
``add_auxiliary_output_to_pp_tensors`` before sending, rank 0 calls
``pop_auxiliary_output_from_pp_tensors`` after receiving. When either raises, this module writes
the dict as it was at the call, with the versions, host, ranks and the message, in the format of
:mod:`ppaux.dump.capture_format`; then the original exception goes on, unchanged.

Two ways in:

* the sglang plugin (:mod:`ppaux.capture.plugin`), which registers :func:`around_add` and
  :func:`around_pop` as AROUND hooks with sglang's own ``HookRegistry`` when
  ``PPAUX_CAPTURE_DIR`` is set (settings from :func:`config_from_env`);
* :func:`install` / :func:`uninstall`, for a launcher of one's own or an sglang without plugins:
  they patch the two functions in the transport module and in every module that imported them
  by name, or, when the module is not loaded yet, as soon as it loads.

The capture never raises into, blocks or changes its host: a failure of its own (an unwritable
directory, a full disk, an object that cannot be pickled) is logged once on the
``ppaux.capture`` logger and swallowed. torch is imported only when a capture is written.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import importlib.abc
import importlib.machinery
import inspect
import io
import itertools
import logging
import os
import pickle
import sys
import threading
import time
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from ppaux.capture import store as capture_store
from ppaux.dump.capture_format import make_capture, make_meta
from ppaux.sglang.names import ADD, OUTPUT_PREFIX, POP, TRANSPORT_MODULE

__all__ = [
    "ADD",
    "POP",
    "TARGET_MODULE",
    "ENV_DIR",
    "ENV_WHEN",
    "ENV_MAX_FILES",
    "ENV_MAX_BYTES",
    "ENV_SAMPLE_EVERY",
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_BYTES",
    "CaptureConfig",
    "CaptureStats",
    "config_from_env",
    "parse_size",
    "install",
    "uninstall",
    "active_config",
    "stats",
    "around_add",
    "around_pop",
    "register_plugin_hooks",
    "capture_original",
]

#: The module that holds sglang's PP auxiliary transport (0.5.19+).
TARGET_MODULE = TRANSPORT_MODULE

ENV_DIR = "PPAUX_CAPTURE_DIR"
ENV_WHEN = "PPAUX_CAPTURE_WHEN"
ENV_MAX_FILES = "PPAUX_CAPTURE_MAX_FILES"
ENV_MAX_BYTES = "PPAUX_CAPTURE_MAX_BYTES"
ENV_SAMPLE_EVERY = "PPAUX_CAPTURE_SAMPLE_EVERY"

DEFAULT_MAX_FILES = 100
DEFAULT_MAX_BYTES = 1 << 30

_WHEN = ("error", "always")
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# How long a writer waits for the directory lock before it gives the capture up: the critical
# section is a directory listing and a rename, so a longer wait means something is stuck.
_LOCK_TIMEOUT_S = 5.0
# Marks the wrappers that install() puts in place, so that nothing is wrapped twice.
_MARK = "__ppaux_capture__"

logger = logging.getLogger("ppaux.capture")


@dataclass(frozen=True)
class CaptureConfig:
    """Where captures go and how many: ``when`` is 'error' (failing calls only) or 'always'
    (every ``sample_every``-th call of each function as well, for healthy traffic).

    Bounds count finished capture files on disk; once either is reached new captures are
    skipped and counted, and the first ones are kept.
    """

    directory: Path
    when: str = "error"
    max_files: int = DEFAULT_MAX_FILES
    max_bytes: int = DEFAULT_MAX_BYTES
    sample_every: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "directory", Path(self.directory))
        if self.when not in _WHEN:
            raise ValueError(f"when must be 'error' or 'always', not {self.when!r}")
        for name in ("max_files", "max_bytes", "sample_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")


@dataclass(frozen=True)
class CaptureStats:
    """What the capture did in this process since it was (last) installed."""

    written: int
    skipped: int
    failed: int
    last_path: Optional[str]


def parse_size(text: str) -> int:
    """Bytes from '1073741824', '64M', '1G' or '1GiB' (K, M, G, T are powers of 1024)."""
    raw = text.strip()
    body = raw.upper().removesuffix("IB").removesuffix("B")
    unit = body[-1:] if body[-1:] in _SIZE_UNITS and body[-1:] else ""
    number = body[: len(body) - len(unit)].strip()
    if not number.isdigit():
        raise ValueError(f"{raw!r} is not a size such as 1073741824, 512M or 1G")
    return int(number) * _SIZE_UNITS[unit]


def config_from_env(environ: Optional[Mapping[str, str]] = None) -> Optional[CaptureConfig]:
    """The configuration the plugin would use: None when ``PPAUX_CAPTURE_DIR`` is unset or empty.

    Raises :class:`ValueError` naming the variable when a ``PPAUX_CAPTURE_*`` value is invalid.
    """
    env = os.environ if environ is None else environ
    directory = env.get(ENV_DIR, "").strip()
    if not directory:
        return None
    fields: dict[str, Any] = {"directory": Path(directory)}
    when = env.get(ENV_WHEN, "").strip()
    if when:
        if when not in _WHEN:
            raise ValueError(f"{ENV_WHEN}={when!r}: must be 'error' or 'always'")
        fields["when"] = when
    for name, field, parse, expected in (
        (ENV_MAX_FILES, "max_files", int, "a whole number"),
        (ENV_MAX_BYTES, "max_bytes", parse_size, "a size such as 1073741824, 512M or 1G"),
        (ENV_SAMPLE_EVERY, "sample_every", int, "a whole number"),
    ):
        text = env.get(name, "").strip()
        if not text:
            continue
        try:
            value = parse(text)
        except ValueError:
            raise ValueError(f"{name}={text!r}: not {expected}") from None
        if value < 1:
            raise ValueError(f"{name}={text!r}: must be at least 1")
        fields[field] = value
    return CaptureConfig(**fields)


# ----------------------------------------------------------------------------------------------
# State. Reads on the hot path are single global loads; every change happens under _state_lock.

_state_lock = threading.RLock()
_config: Optional[CaptureConfig] = None
_sampling = False  # True when _config.when == "always": lets the hot path skip the counters
_counters = {ADD: itertools.count(), POP: itertools.count()}
_patched: dict[str, tuple[types.ModuleType, Callable, Callable]] = {}
_watcher: Optional["_ModuleWatcher"] = None
_plugin_hooks = False
_seq = itertools.count(1)
_written = 0
_skipped = 0
_failed = 0
_last_path: Optional[str] = None
_warned: set[str] = set()
_io_lock = threading.Lock()  # one writer of this process inside the directory lock at a time


def active_config() -> Optional[CaptureConfig]:
    """The configuration in force in this process, or None when capture is off."""
    return _config


def stats() -> CaptureStats:
    """Counts of captures written, skipped by the bounds and failed, in this process."""
    return CaptureStats(_written, _skipped, _failed, _last_path)


def _activate(config: Optional[CaptureConfig]) -> None:
    global _config, _sampling, _written, _skipped, _failed, _last_path
    with _state_lock:
        _config = config
        _sampling = config is not None and config.when == "always"
        for name in _counters:
            _counters[name] = itertools.count()
        _written = _skipped = _failed = 0
        _last_path = None
        _warned.clear()


# ----------------------------------------------------------------------------------------------
# The hooks. Each has the signature of an sglang AROUND hook: hook(original_fn, *args, **kwargs).
# The healthy path adds a global load, a test and a try block; everything else is off it.


def around_add(original: Callable, *args: Any, **kwargs: Any) -> Any:
    """AROUND hook for ``add_auxiliary_output_to_pp_tensors``: capture when it raises."""
    config = _config
    if config is None:
        return original(*args, **kwargs)
    if _sampling and next(_counters[ADD]) % config.sample_every == 0:
        return _sampled_call(ADD, config, original, args, kwargs)
    try:
        # add inserts new keys one by one and stops at the first bad entry; a dict keeps
        # insertion order, so its first `before` items are the dict as it was at the call.
        before = len(args[0]) if args else len(kwargs["tensors"])
    except Exception:
        before = -1
    try:
        return original(*args, **kwargs)
    except Exception as exc:
        _capture_add(config, exc, args, kwargs, before)
        raise


def around_pop(original: Callable, *args: Any, **kwargs: Any) -> Any:
    """AROUND hook for ``pop_auxiliary_output_from_pp_tensors``: capture when it raises."""
    config = _config
    if config is None:
        return original(*args, **kwargs)
    if _sampling and next(_counters[POP]) % config.sample_every == 0:
        return _sampled_call(POP, config, original, args, kwargs)
    try:
        return original(*args, **kwargs)
    except Exception as exc:
        # pop changes the dict only after every check passed, so on error it is as it came.
        _capture_pop(config, exc, args, kwargs)
        raise


# The same two hooks for the signatures of sglang 0.5.19 - 0.5.23, (tensors, output) and
# (tensors, observer): without **kwargs a call costs no dict, which is most of a generic
# wrapper's price. Used only after _has_signature() confirmed the target's parameters.


def _around_add_fixed(original: Callable, tensors: Any, output: Any) -> Any:
    config = _config
    if config is None:
        return original(tensors, output)
    if _sampling and next(_counters[ADD]) % config.sample_every == 0:
        return _sampled_call(ADD, config, original, (tensors, output), {})
    try:
        before = len(tensors)
    except Exception:
        before = -1
    try:
        return original(tensors, output)
    except Exception as exc:
        _capture_add(config, exc, (tensors, output), {}, before)
        raise


def _around_pop_fixed(original: Callable, tensors: Any, observer: Any) -> Any:
    config = _config
    if config is None:
        return original(tensors, observer)
    if _sampling and next(_counters[POP]) % config.sample_every == 0:
        return _sampled_call(POP, config, original, (tensors, observer), {})
    try:
        return original(tensors, observer)
    except Exception as exc:
        _capture_pop(config, exc, (tensors, observer), {})
        raise


_SECOND_PARAMETER = {ADD: "output", POP: "observer"}


def _has_signature(function: str, target: Any) -> bool:
    """True when ``target`` takes exactly (tensors, output|observer), as sglang's do."""
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return False
    return [p.name for p in parameters] == ["tensors", _SECOND_PARAMETER[function]] and all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.default is inspect.Parameter.empty
        for p in parameters
    )


def _hook_for(function: str, target: Any) -> Callable:
    """The cheapest hook that accepts every call ``target`` accepts."""
    fixed = _has_signature(function, target)
    if function == ADD:
        return _around_add_fixed if fixed else around_add
    return _around_pop_fixed if fixed else around_pop


def _argument(args: tuple, kwargs: dict, index: int, name: str) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name)


def _capture_add(config: CaptureConfig, exc: BaseException, args: tuple, kwargs: dict,
                 before: int) -> None:
    try:
        snapshot = _snapshot(_argument(args, kwargs, 0, "tensors"), before)
        output = _output_tensors(_argument(args, kwargs, 1, "output"))
    except Exception as error:  # never into the host
        _note_failure("could not read the arguments of the failing call", error)
        return
    _record(ADD, config, exc, snapshot, output)


def _capture_pop(config: CaptureConfig, exc: BaseException, args: tuple, kwargs: dict) -> None:
    try:
        snapshot = _snapshot(_argument(args, kwargs, 0, "tensors"), -1)
    except Exception as error:
        _note_failure("could not read the arguments of the failing call", error)
        return
    _record(POP, config, exc, snapshot, None)


def _sampled_call(function: str, config: CaptureConfig, original: Callable, args: tuple,
                  kwargs: dict) -> Any:
    """Run a call chosen for 'always' recording: copy the dict first, record after."""
    try:
        tensors = _argument(args, kwargs, 0, "tensors")
        snapshot = _snapshot(tensors, -1)
        before = len(snapshot) if isinstance(snapshot, dict) else -1
    except Exception:
        tensors, snapshot, before = None, None, -1
    try:
        result = original(*args, **kwargs)
    except Exception as exc:
        if snapshot is not None:
            output = None
            if function == ADD:
                output = _output_tensors(_argument(args, kwargs, 1, "output"))
            _record(function, config, exc, snapshot, output)
        raise
    if snapshot is not None:
        output = None
        if function == ADD:
            try:  # what add inserted: every item after the ones that were there
                added = itertools.islice(tensors.items(), before, None)
                output = {k[len(OUTPUT_PREFIX):]: v for k, v in added} or None
            except Exception:
                output = None
        _record(function, config, None, snapshot, output)
    return result


def _snapshot(tensors: Any, before: int) -> Any:
    """A plain-dict copy of the tensor dict (its first ``before`` items when that is >= 0)."""
    if isinstance(tensors, Mapping):
        items = tensors.items()
        if before >= 0:
            return dict(itertools.islice(items, before))
        return dict(items)
    return tensors


def _output_tensors(output: Any) -> Any:
    """The add-side output's tensors, asked for once more; None when it has none."""
    if output is None:
        return None
    to_pp_tensors = getattr(output, "to_pp_tensors", None)
    if to_pp_tensors is None:
        return None
    try:
        tensors = to_pp_tensors()
    except Exception:
        return None
    if isinstance(tensors, Mapping):
        return dict(tensors.items())
    return tensors


# ----------------------------------------------------------------------------------------------
# Writing one capture


def _record(function: str, config: CaptureConfig, exc: Optional[BaseException], tensors: Any,
            output: Any) -> None:
    """Write one capture; count it; log the first failure and swallow every one."""
    global _written, _skipped, _failed, _last_path
    try:
        path = _write(function, config, exc, tensors, output)
    except Exception as error:
        with _state_lock:
            _failed += 1
        _note_failure(f"could not write a capture to {config.directory}", error)
        return
    with _state_lock:
        if path is None:
            _skipped += 1
        else:
            _written += 1
            _last_path = str(path)
        first_skip = path is None and "full" not in _warned
        if first_skip:
            _warned.add("full")
    if first_skip:
        logger.warning(
            "ppaux capture: %s is full (max_files=%d, max_bytes=%d); further captures are "
            "skipped and counted", config.directory, config.max_files, config.max_bytes,
        )


def _note_failure(what: str, error: BaseException) -> None:
    # One warning per process: a broken capture must not flood the host's logs.
    with _state_lock:
        first = "failure" not in _warned
        _warned.add("failure")
    if not first:
        logger.debug("ppaux capture: %s: %s", what, error)
        return
    logger.warning("ppaux capture: %s: %s: %s (the host's own error is unchanged; later "
                   "capture failures are not logged)", what, type(error).__name__, error)


def _write(function: str, config: CaptureConfig, exc: Optional[BaseException], tensors: Any,
           output: Any) -> Optional[Path]:
    """Write the capture atomically; return its path, or None when the bounds refused it."""
    import torch

    directory = config.directory
    directory.mkdir(parents=True, exist_ok=True)
    if _full(capture_store.usage(directory), config, 0):
        _count_skip(directory)
        return None
    meta = _meta(function, exc, config, torch)
    payload = make_capture(meta, tensors, output)
    seq = next(_seq)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    final = directory / capture_store.capture_name(now, meta["host"], meta["pid"], seq, function)
    temp = directory / f"{capture_store.TEMP_PREFIX}{final.stem}"
    placed = False
    try:
        _save(torch, payload, temp)
        size = temp.stat().st_size
        with _DirectoryLock(directory):
            if _full(capture_store.usage(directory), config, size):
                _add_skipped(directory)
                return None
            # Every ppaux writer renames under this lock, so a name checked free stays free
            # (a recycled pid could otherwise meet a name from an earlier process).
            while final.exists():
                final = directory / capture_store.capture_name(
                    now, meta["host"], meta["pid"], next(_seq), function)
            # rename within one directory is atomic: readers see the whole file or none of it
            os.rename(temp, final)
            placed = True
    finally:
        if not placed:
            try:
                os.unlink(temp)
            except OSError:
                pass
    return final


def _full(current: capture_store.Usage, config: CaptureConfig, size: int) -> bool:
    return current.files + 1 > config.max_files or current.bytes + size > config.max_bytes


def _count_skip(directory: Path) -> None:
    with _DirectoryLock(directory):
        _add_skipped(directory)


def _add_skipped(directory: Path) -> None:
    # Caller holds the directory lock; replace() keeps the counter whole for readers.
    count = capture_store.read_skipped(directory) + 1
    temp = directory / f"{capture_store.TEMP_PREFIX}skipped-{os.getpid()}"
    temp.write_text(f"{count}\n", encoding="ascii")
    os.replace(temp, directory / capture_store.SKIPPED_NAME)


def _save(torch: Any, payload: dict, temp: Path) -> None:
    """torch.save to a new file; values that cannot be pickled are saved as their repr."""
    # A file object (not a path): the zip's record folder is then always 'archive', whatever
    # the temporary file was called.
    try:
        with open(temp, "xb") as handle:
            torch.save(payload, handle)
        return
    except (pickle.PicklingError, TypeError, AttributeError):
        os.unlink(temp)
    payload = dict(payload, tensors=_picklable(payload["tensors"]),
                   output=_picklable(payload["output"]))
    with open(temp, "xb") as handle:
        torch.save(payload, handle)


def _picklable(value: Any) -> Any:
    """``value`` with every top-level entry that cannot be pickled replaced by its repr."""
    if not isinstance(value, dict):
        return value if _can_pickle(value) else _placeholder(value)
    import torch

    return {k: v if torch.is_tensor(v) or _can_pickle(v) else _placeholder(v)
            for k, v in value.items()}


def _can_pickle(value: Any) -> bool:
    try:
        pickle.dump(value, io.BytesIO(), protocol=2)
    except Exception:
        return False
    return True


def _placeholder(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = object.__repr__(value)
    return f"<not picklable {type(value).__qualname__}: {text[:200]}>"


class _DirectoryLock:
    """Exclusive use of one capture directory across threads and processes, with a time limit.

    A lock file and ``flock`` where the platform has it (Linux, macOS); threads of one process
    also queue on a lock of their own. Raises :class:`TimeoutError` rather than wait for long.
    """

    def __init__(self, directory: Path) -> None:
        self._path = directory / capture_store.LOCK_NAME
        self._fd: Optional[int] = None

    def __enter__(self) -> "_DirectoryLock":
        if not _io_lock.acquire(timeout=_LOCK_TIMEOUT_S):
            raise TimeoutError(f"{self._path}: busy for more than {_LOCK_TIMEOUT_S} s")
        try:
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
            _flock(self._fd, self._path)
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
        _io_lock.release()


def _flock(fd: int, path: Path) -> None:
    try:
        import fcntl
    except ImportError:  # no flock on this platform: threads of one process are still serialised
        return
    deadline = time.monotonic() + _LOCK_TIMEOUT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path}: locked by another process for more than "
                                   f"{_LOCK_TIMEOUT_S} s") from None
            time.sleep(0.001)
        except OSError:
            # A file system without flock (some network mounts): capture anyway; only the
            # bounds may then be overrun by processes racing each other.
            return


# ----------------------------------------------------------------------------------------------
# Metadata


def _meta(function: str, exc: Optional[BaseException], config: CaptureConfig, torch: Any) -> dict:
    pp_rank, pp_size = _pp_position()
    meta = make_meta(function, exc, when=config.when, sglang_version=_sglang_version(),
                     torch_version=getattr(torch, "__version__", None),
                     pp_rank=pp_rank, pp_size=pp_size)
    if meta["rank"] is None or meta["world_size"] is None:
        rank, world_size = _distributed_rank(torch)
        if meta["rank"] is None:
            meta["rank"] = rank
        if meta["world_size"] is None:
            meta["world_size"] = world_size
    return {k: _plain(v) for k, v in meta.items()}


def _plain(value: Any) -> Any:
    # The format promises plain str/int values: torch.__version__ is a str subclass
    # (TorchVersion) that would pickle as a torch class, and an exception may format to one.
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__index__(value)
    return str(value)


def _pp_position() -> tuple[Optional[int], Optional[int]]:
    """This process's PP rank and size from sglang's parallel state, if it is loaded and set."""
    # Only look, never import: the module pulls in half of sglang and may not be initialised.
    state = sys.modules.get("sglang.srt.distributed.parallel_state")
    group = getattr(state, "_PP", None) if state is not None else None
    rank = getattr(group, "rank_in_group", None)
    size = getattr(group, "world_size", None)
    return (rank if isinstance(rank, int) else None, size if isinstance(size, int) else None)


def _distributed_rank(torch: Any) -> tuple[Optional[int], Optional[int]]:
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:
        pass
    return None, None


@functools.lru_cache(maxsize=1)
def _sglang_version() -> Optional[str]:
    """The running sglang's version, read as text: importing sglang would run its heavy __init__."""
    try:
        from ppaux.sglang import loader as sglang_module

        root = sglang_module.find_sglang_root()
        if root is not None:
            found = sglang_module.sglang_version(root)
            if found:
                return found
    except Exception:
        pass
    try:
        import importlib.metadata

        return importlib.metadata.version("sglang")
    except Exception:
        return None


# ----------------------------------------------------------------------------------------------
# install() / uninstall(): patching without sglang's plugin framework


def install(
    directory: str | os.PathLike,
    *,
    when: str = "error",
    max_files: int = DEFAULT_MAX_FILES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    sample_every: int = 1,
) -> None:
    """Capture failing (or, with ``when='always'``, sampled) transport calls into ``directory``.

    Patches ``add_auxiliary_output_to_pp_tensors`` and ``pop_auxiliary_output_from_pp_tensors``
    in ``sglang.srt.sampling.sampling_observer_pp`` and in every loaded module that imported
    them by name; when that module is not loaded yet, patches it as soon as it is imported.
    Calling it again changes the settings and keeps the patches. When the sglang plugin already
    routes both functions through ppaux, only the settings change. Raises :class:`ValueError`
    for an invalid setting.
    """
    if not os.fspath(directory):
        raise ValueError("the capture directory must not be empty")  # Path('') would be '.'
    config = CaptureConfig(Path(directory), when, max_files, max_bytes, sample_every)
    global _watcher
    with _state_lock:
        _activate(config)
        if _plugin_hooks:
            return
        module = sys.modules.get(TARGET_MODULE)
        if module is not None:
            _patch(module)
        if _watcher is None:
            # Also when the module is loaded: a reload or a fresh import must be patched again.
            _watcher = _ModuleWatcher()
            sys.meta_path.insert(0, _watcher)


def uninstall() -> None:
    """Stop capturing: restore the original functions everywhere install() put wrappers.

    Hooks registered through sglang's plugin framework cannot be removed; they become
    pass-through calls.
    """
    global _watcher
    with _state_lock:
        _activate(None)
        if _watcher is not None:
            try:
                sys.meta_path.remove(_watcher)
            except ValueError:
                pass
            _watcher = None
        for name, (module, original, wrapper) in list(_patched.items()):
            if module.__dict__.get(name) is wrapper:
                setattr(module, name, original)
            _rebind(wrapper, original, module)
        _patched.clear()


def _patch(module: types.ModuleType) -> None:
    """Wrap both functions in ``module`` and rebind every by-name import of them."""
    for name in (ADD, POP):
        original = module.__dict__.get(name)
        if original is None or not callable(original) or getattr(original, _MARK, False):
            continue
        wrapper = _wrap(original, _hook_for(name, original))
        setattr(module, name, wrapper)
        _rebind(original, wrapper, module)
        _patched[name] = (module, original, wrapper)


def _wrap(original: Callable, hook: Callable) -> Callable:
    """A stand-in for ``original`` that runs ``hook(original, ...)``, named and documented
    like it; it takes exactly ``original``'s two parameters when ``hook`` is a fixed one."""
    if hook is _around_add_fixed:

        def wrapper(tensors: Any, output: Any) -> Any:
            return _around_add_fixed(original, tensors, output)

    elif hook is _around_pop_fixed:

        def wrapper(tensors: Any, observer: Any) -> Any:  # type: ignore[misc]
            return _around_pop_fixed(original, tensors, observer)

    else:

        def wrapper(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
            return hook(original, *args, **kwargs)

    functools.update_wrapper(wrapper, original)
    setattr(wrapper, _MARK, True)
    return wrapper


def _rebind(old: object, new: object, source: types.ModuleType) -> int:
    """Point every module global that is ``old`` at ``new`` (the ``from X import f`` copies)."""
    count = 0
    for module in list(sys.modules.values()):
        if module is source or not isinstance(module, types.ModuleType):
            continue
        try:
            names = [k for k, v in vars(module).items() if v is old]
        except Exception:  # a module object with an unusual __dict__
            continue
        for name in names:
            try:
                setattr(module, name, new)
                count += 1
            except Exception:
                pass
    return count


class _ModuleWatcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the loader of the transport module so that it gets patched
    the moment it has been executed, before any other module can import from it."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        """Return the transport module's spec from the next finder, with a patching loader."""
        if fullname != TARGET_MODULE:
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                return None  # let the import system report it as it would without us
            if spec is None:
                continue
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _PatchingLoader(spec.loader)
            return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    """Delegates to the real loader, then patches the freshly executed module."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        """The real loader's module object (None: the default)."""
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: types.ModuleType) -> None:
        """Run the module as the real loader does, then patch it if capture is still on."""
        self._loader.exec_module(module)
        try:
            with _state_lock:
                if _config is not None and not _plugin_hooks:
                    _patch(module)
        except Exception as error:  # an import of sglang must never fail because of ppaux
            _note_failure(f"could not patch {TARGET_MODULE}", error)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def capture_original(function: Any) -> Any:
    """The function that ``function`` runs, if it is a ppaux capture wrapper; else None.

    Recognises the wrappers of :func:`install` and the AROUND wrappers sglang's ``HookRegistry``
    builds around this module's hooks (their closure holds the hook). Only looks at attributes
    and closure cells; calls nothing. For tools that check whether the transport was patched.
    """
    inner = getattr(function, "__wrapped__", None)
    if inner is None:
        return None
    if getattr(function, _MARK, False):
        return inner
    hooks = (around_add, around_pop, _around_add_fixed, _around_pop_fixed)
    for cell in getattr(function, "__closure__", None) or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if any(contents is hook for hook in hooks):
            return inner
    return None


# ----------------------------------------------------------------------------------------------
# The sglang plugin form


def register_plugin_hooks(config: CaptureConfig) -> bool:
    """Register :func:`around_add` and :func:`around_pop` with sglang's ``HookRegistry``.

    Called by :func:`ppaux.capture.plugin.register` inside sglang's ``load_plugins()``, which
    applies the hooks right after and carries them to by-name imports. Returns False (and
    changes nothing but the settings) when :func:`install` already patched the functions.
    """
    global _plugin_hooks
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    with _state_lock:
        _activate(config)
        if _patched or _plugin_hooks:
            return False
        # apply_hooks() imports the module right after this returns; importing it here first
        # lets the hooks match the functions' signatures (see _hook_for).
        module = importlib.import_module(TARGET_MODULE)
        for name in (ADD, POP):
            hook = _hook_for(name, getattr(module, name, None))
            HookRegistry.register(f"{TARGET_MODULE}.{name}", hook, HookType.AROUND)
        _plugin_hooks = True
        return True
