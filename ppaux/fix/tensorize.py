"""``tensorize``: rewrite a dump or capture with every non-tensor auxiliary value made a tensor.

The input is read only through the safe reader (:func:`ppaux.dump.dumpfile.read_dump`: nothing
in it is unpickled or imported) and its tensors are rebuilt from the zip records the way replay
rebuilds them (:mod:`ppaux.replay.materialize`). Each non-tensor auxiliary value (under a
``__sampling_observer_output__.`` key of a message, or a name of a capture's add-side output) is
converted as :func:`ppaux.guard.tensorize` converts it; everything else is written back as it
was, every storage under the location it was saved with.

The output is written only when every auxiliary value is then a tensor, so that it always pops
cleanly; one value that cannot be converted (None, a string, an object whose class ppaux never
imports, a numpy array of objects)
means nothing is written, with the reason. Python floats become float32 (torch.tensor's
default) where float32 holds each value bit for bit, float64 where it would round, flush or
overflow one (the conversion names the value). A numpy array is
converted from the bytes numpy pickled, read with the dtype, byte order, shape and order that
the pickle names; numpy itself never runs. Every tensor kept is written as torch reads it from
the input: its dtype, shape, strides, conjugate and negative bits, and values in the byte order
the file declares. A capture stays a capture: its metadata records the rewrite (see
:mod:`ppaux.dump.capture_format`). The input is never written to; the output is written to a
temporary file beside it and renamed into place.

This module does not import torch at import time; :func:`tensorize_dump` does.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ppaux.dump import Dump, NdArrayRef, Payload, TensorRef, read_dump
from ppaux.errors import DumpError, nested_past_recursion
from ppaux.files import InputFileError, OutputPathError, check_output, open_regular
from ppaux.fix.expansion import check_expanded
from ppaux.fix.numpy_arrays import numpy_problem, numpy_tensor
from ppaux.limits import Limits
from ppaux.sglang import OUTPUT_PREFIX
from ppaux.text import cut, with_article
from ppaux.torch_probe import has_torch, import_torch, require_torch

if TYPE_CHECKING:
    from torch import Tensor
    from torch.serialization import STORAGE

__all__ = ["Conversion", "OutputPathError", "Refusal", "TensorizeResult", "tensorize_dump"]

#: Subclasses that survive a rebuild and a save (the reader's name for them).
_KEPT_SUBCLASSES = (None, "torch.nn.parameter.Parameter", "torch.nn.Parameter")
_PLAIN = (
    dict,
    list,
    tuple,
    set,
    frozenset,
    str,
    bytes,
    bytearray,
    int,
    float,
    complex,
    bool,
    type(None),
)


@dataclass(frozen=True)
class Conversion:
    """One value converted: where (``locator`` of the dict, ``key``), what it was, what it is."""

    locator: str
    key: str
    before: str
    after: str


@dataclass(frozen=True)
class Refusal:
    """A value (``key``) or the whole file (``key`` None) that cannot be rewritten, and why."""

    locator: str
    key: str | None
    reason: str


#: The reason a file with nothing to convert is given back unwritten.
NOTHING_TO_CONVERT = (
    "every auxiliary value is a tensor already (or there is none): nothing to convert"
)


@dataclass(frozen=True)
class TensorizeResult:
    """What :func:`tensorize_dump` did: ``written`` is True only when ``output`` was written."""

    source: str
    output: str
    conversions: tuple[Conversion, ...]
    refusals: tuple[Refusal, ...]
    written: bool
    source_sha256: str

    @property
    def nothing_to_convert(self) -> bool:
        """Whether the file was refused only because every auxiliary value is a tensor
        already (or there is none): nothing is wrong with it that tensorize could fix."""
        return not self.written and [r.reason for r in self.refusals] == [NOTHING_TO_CONVERT]


def tensorize_dump(source: str, output: str, limits: Limits = Limits()) -> TensorizeResult:
    """Rewrite ``source`` into ``output`` with its non-tensor auxiliary values as tensors.

    Raises :class:`~ppaux.errors.DumpError` when ``source`` cannot be read, then
    :class:`~ppaux.errors.TorchMissingError` where torch is not installed, then
    :class:`OutputPathError` when ``output`` is ``source`` (by any path, link or hard link) or
    cannot be written. Writes nothing, and says why in ``refusals``, when nothing needs
    converting or some value cannot be converted.
    """
    source, output = os.fspath(source), os.fspath(output)
    if not has_torch():  # a file torch would not help with is said first
        read_dump(source, limits)
        require_torch("tensorize")
    _check_output(source, output)
    try:
        return _tensorize(source, output, limits)
    except RecursionError:  # nested within max_depth, deeper than rewriting can go
        raise nested_past_recursion(source, limits.max_depth, "rewrite") from None


def _tensorize(source: str, output: str, limits: Limits) -> TensorizeResult:
    from ppaux.dump import find_payloads, walk

    digest = _sha256(source)
    dump = read_dump(source, limits)
    # In inspect's order: too many tensor dicts or tensors are refused by the search for them,
    # before a walk of everything the file holds.
    payloads = find_payloads(dump, limits)
    for _ in walk(dump.root, limits, source):
        pass  # a hostile structure fails here, as one clear error, before anything is built
    refusals: list[Refusal] = []
    # (payload, key, value) of every auxiliary value that is not a tensor.
    todo: list[tuple[Any, Any, Any]] = []
    refused: list[Any] = []  # values refused one by one: the file check below skips them
    for payload in payloads:
        for key, value in payload.mapping.items():
            if payload.role != "output" and not isinstance(key, str):
                refusals.append(
                    Refusal(
                        payload.locator,
                        _key_name(key),
                        "the key is not a string: "
                        "pop fails on it whatever its value; tensorize converts "
                        "values, not keys",
                    )
                )
                continue
            is_aux = payload.role == "output" or key.startswith(OUTPUT_PREFIX)
            if is_aux and not isinstance(value, TensorRef):
                reason = _unreadable(value, limits, source)
                if reason is not None:
                    refusals.append(Refusal(payload.locator, _key_name(key), reason))
                    refused.append(value)
                else:
                    check_expanded(value, limits, source, _key_name(key))
                    todo.append((payload, key, value))
    result = {"source": source, "output": output, "source_sha256": digest}
    if not payloads:
        refusals.append(Refusal("", None, "no tensor dict found in the file"))
    elif not todo and not refusals:
        refusals.append(Refusal("", None, NOTHING_TO_CONVERT))
    refusals += _rest_of_file(dump, [v for _, _, v in todo] + refused, limits)
    if refusals:
        return TensorizeResult(conversions=(), refusals=tuple(refusals), written=False, **result)
    return _rewrite(dump, payloads, todo, limits, result)


# ----------------------------------------------------------------------------------------------
# What can be rebuilt


def _key_name(key: object) -> str:
    from ppaux.dump import key_text

    return key_text(key)


def _unreadable(value: object, limits: Limits, path: str) -> str | None:
    """Why ``value`` cannot be rebuilt from the file safely, or None when it can."""
    from ppaux.dump import value_phrase, walk

    if isinstance(value, NdArrayRef):
        return numpy_problem(value)
    for node in walk(value, limits, path):
        if type(node) in _PLAIN or isinstance(node, TensorRef):
            continue
        what = value_phrase(node, limits)
        inside = "" if node is value else f"it holds {what}; "
        if isinstance(node, NdArrayRef):
            return (
                f"{inside}ppaux converts a numpy array only when it is the auxiliary value "
                "itself; convert it where it is made, with torch.from_numpy(array)"
            )
        return (
            f"{inside}{what if node is value else 'that'} is not rebuilt by ppaux, which "
            "never imports a class from a file; return a tensor from to_pp_tensors() where "
            "the value is made"
        )
    return None


def _rest_of_file(dump: Dump, converted: list[Any], limits: Limits) -> list[Refusal]:
    """Refusals for anything outside the converted values that cannot be written back as it
    was: an object whose class was never imported, a numpy array, a tensor subclass."""
    from ppaux.dump import key_text, type_name, walk

    skip: set[int] = set()
    for value in converted:
        skip.update(id(node) for node in walk(value, limits, dump.path) if node is not value)
        skip.add(id(value))
    root = dump.root
    top = root.items() if isinstance(root, dict) else [(None, root)]
    seen: set[int] = set(skip)
    for key, value in top:
        for node in walk(value, limits, dump.path, seen):
            if isinstance(node, TensorRef):
                if node.subclass not in _KEPT_SUBCLASSES:
                    what = with_article(f"{node.subclass} tensor")
                else:
                    continue
            elif type(node) in _PLAIN:
                continue
            else:
                what = with_article(type_name(node))
            where = f" under {key_text(key)}" if key is not None else ""
            return [
                Refusal(
                    "",
                    None,
                    f"the file also holds {what}{where}, which ppaux cannot "
                    "write back as it was; nothing is written rather than a changed "
                    "copy",
                )
            ]
    return []


# ----------------------------------------------------------------------------------------------
# The rewrite


def _rewrite(
    dump: Dump,
    payloads: list[Any],
    todo: list[tuple[Any, Any, Any]],
    limits: Limits,
    result: dict[str, str],
) -> TensorizeResult:
    torch = import_torch()

    from ppaux.dump import value_phrase
    from ppaux.guard import NotTensorizable, tensorize
    from ppaux.replay import MaterializeError, Materializer

    conversions: list[Conversion] = []
    refusals: list[Refusal] = []
    with Materializer(dump, torch.device("cpu"), limits) as build:
        try:
            root = build.value(dump.root)
        except MaterializeError as exc:
            return TensorizeResult(
                conversions=(), refusals=(Refusal("", None, exc.reason),), written=False, **result
            )
        locations = build.saved_locations()
        for payload, key, value in todo:
            mapping = build.value(payload.mapping)
            try:
                if isinstance(value, NdArrayRef):
                    tensor, why = numpy_tensor(value), ""
                else:
                    plain = build.value(value)
                    tensor, why = _exact(torch, plain, tensorize(plain))
                    _check_ints(plain, tensor, value_phrase(value, limits))
            except NotTensorizable as exc:
                refusals.append(Refusal(payload.locator, _key_name(key), exc.reason))
                continue
            device = _reference_device(payloads, payload)
            tensor = tensor.contiguous()
            if tensor.numel():
                locations[tensor.untyped_storage().data_ptr()] = device
            mapping[key] = tensor
            conversions.append(
                Conversion(
                    payload.locator,
                    _key_name(key),
                    value_phrase(value, limits),
                    f"{str(tensor.dtype).removeprefix('torch.')} tensor of shape "
                    f"{tuple(tensor.shape)} on {device}{why}",
                )
            )
    if refusals:
        return TensorizeResult(conversions=(), refusals=tuple(refusals), written=False, **result)
    if dump.capture is not None and isinstance(root, dict) and isinstance(root.get("meta"), dict):
        root["meta"] = _rewritten_meta(root["meta"], result, conversions)
    _save_atomically(torch, root, result["output"], locations)
    return TensorizeResult(conversions=tuple(conversions), refusals=(), written=True, **result)


def _exact(torch: ModuleType, plain: object, tensor: Tensor) -> tuple[Tensor, str]:
    """``tensor`` where it holds the numbers of ``plain`` bit for bit, else ``plain`` as a
    float64 (complex128) tensor, with why. Python floats are doubles; ``torch.tensor`` makes them
    the default float dtype (float32), which rounds (0.1), flushes a subnormal to 0.0 (1e-310) and
    makes a value past its range infinite (1e40): a file rewritten with it would carry other
    values than the one it fixes, so the wider dtype is written, naming the first value float32
    would change."""
    if not (tensor.is_floating_point() or tensor.is_complex()) or tensor.dtype in (
        torch.float64,
        torch.complex128,
    ):
        return tensor, ""
    if isinstance(plain, (list, tuple)) and plain and torch.is_tensor(plain[0]):
        return tensor, ""  # tensors stacked: their values are kept as they are
    wider = torch.complex128 if tensor.is_complex() else torch.float64
    wide = torch.tensor(plain, dtype=wider)
    back = tensor.to(wider)
    if tensor.is_complex():
        same = (
            torch.view_as_real(back).view(torch.int64) == torch.view_as_real(wide).view(torch.int64)
        ).all(-1)
    else:
        same = back.view(torch.int64) == wide.view(torch.int64)
    if bool(same.all()):
        return tensor, ""
    where = [int(i) for i in (~same).nonzero()[0]]
    at = "".join(f"[{i}]" for i in where)
    named, wide_name = (str(t).removeprefix("torch.") for t in (tensor.dtype, wider))
    return wide, (
        f" ({wide_name}: {named} would turn {wide[tuple(where)].item()!r}"
        f"{' at ' + at if at else ''} into {tensor[tuple(where)].item()!r})"
    )


def _check_ints(plain: object, tensor: Tensor, what: str) -> None:
    """Refuse an int that a float or complex tensor does not hold exactly. torch.tensor makes a
    list of ints and floats a float tensor, and even float64 rounds an int past 2**53
    (``torch.tensor([2**53 + 1, 1.5], dtype=torch.float64)`` holds 2**53): the rewritten file
    would hold another value than the original, so nothing is written."""
    from ppaux.guard import NotTensorizable

    if not (tensor.is_floating_point() or tensor.is_complex()):
        return
    items: list[object] = [plain]
    while items and isinstance(items[0], (list, tuple)):
        items = [item for row in items for item in row]  # type: ignore[attr-defined]
    if not any(type(item) is int for item in items):
        return
    for index, (item, held) in enumerate(zip(items, tensor.reshape(-1).tolist(), strict=True)):
        if type(item) is int and held != item:
            at = []
            for size in reversed(tensor.shape):
                index, place = divmod(index, size)
                at.append(f"[{place}]")
            # _exact chose the narrower dtype only where float64 rounds the value alike.
            raise NotTensorizable(
                what,
                f"the int {cut(str(item), 40)}{' at ' + ''.join(reversed(at)) if at else ''} "
                f"is in a list with floats, and no float tensor holds it exactly (torch.tensor "
                f"makes it {held!r}, even as float64): the rewritten file would hold another "
                "value than the original; send the ints as an int64 tensor of their own",
            )


def _reference_device(payloads: list[Payload], payload: Payload) -> str:
    """The device a converted value is recorded on: that of the message's other tensors."""
    mappings = [payload.mapping]
    if payload.role == "output":  # an add-side output joins the capture's tensor dict
        mappings = [p.mapping for p in payloads if p.role == "capture"] + mappings
    devices: Counter[str] = Counter(
        v.device
        for mapping in mappings
        for v in mapping.values()
        if isinstance(v, TensorRef) and v.kind != "meta" and v.device != "meta"
    )
    return devices.most_common(1)[0][0] if devices else "cpu"


def _rewritten_meta(
    meta: dict[Any, Any], result: dict[str, str], conversions: list[Conversion]
) -> dict[Any, Any]:
    from ppaux._version import __version__

    new = dict(meta)
    new["original_exception_type"] = meta.get("exception_type")
    new["original_exception_message"] = meta.get("exception_message")
    # The rewritten dict pops cleanly: every auxiliary value is a tensor. What the captured run
    # raised is kept above; these two describe the dict as it is now.
    new["exception_type"] = None
    new["exception_message"] = None
    new["rewritten_by"] = f"ppaux tensorize {__version__}"
    new["rewritten_time"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    new["rewritten_from"] = os.path.abspath(result["source"])
    new["rewritten_from_sha256"] = result["source_sha256"]
    new["rewritten_keys"] = "\n".join(f"{c.locator}[{c.key!r}]" for c in conversions)
    return new


@contextlib.contextmanager
def _recorded_locations(torch: ModuleType, locations: dict[int, str]) -> Iterator[None]:
    """While saving, tag each storage with the location it was saved with in the input.

    Tensors were rebuilt on the CPU; without this, a dict received on ``cuda:1`` would come
    back as CPU tensors. torch asks its registered taggers in priority order for each storage's
    location; this one answers first for the storages it knows and is removed afterwards.
    """

    def tagger(storage: STORAGE) -> str | None:
        try:
            return locations.get(storage.data_ptr())
        except (RuntimeError, AttributeError):
            return None

    def deserializer(storage: object, location: str) -> None:
        return None

    torch.serialization.register_package(0, tagger, deserializer)
    try:
        yield
    finally:
        registry = torch.serialization._package_registry
        registry[:] = [entry for entry in registry if entry[1] is not tagger]


def _save_atomically(
    torch: ModuleType, root: object, output: str, locations: dict[int, str]
) -> None:
    folder = os.path.dirname(os.path.abspath(output))
    try:
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".ppaux-tensorize-", suffix=".tmp")
    except OSError as exc:
        raise OutputPathError(output, f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            with _recorded_locations(torch, locations):
                torch.save(root, handle)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, output)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise OutputPathError(output, f"cannot write: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# ----------------------------------------------------------------------------------------------
# Paths


def _check_output(source: str, output: str) -> None:
    # Every output's rule: a path, of a regular file or a new one, never an input (by any
    # spelling or link). A new file renamed into place would replace a symbolic link itself
    # (/dev/stdout became a file) and a file this process may not write: both are refused.
    if not output:
        raise OutputPathError(output, "an empty path; give a file name, or - for stdout")
    check_output(output, [source])
    if os.path.islink(output):
        raise OutputPathError(
            output,
            "is a symbolic link, which tensorize would replace with the dump; "
            "give the file it names, or - for stdout",
        )
    if os.path.exists(output) and not os.access(output, os.W_OK):
        raise OutputPathError(output, "cannot write: Permission denied")


def _sha256(path: str) -> str:
    try:
        handle, _ = open_regular(path, "dump")
    except InputFileError as exc:
        raise DumpError(path, exc.reason) from None
    digest = hashlib.sha256()
    with handle:
        try:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        except OSError as exc:
            raise DumpError(path, f"cannot read: {exc.strerror or exc}") from None
    return digest.hexdigest()
