"""A fingerprint: what one host or rank runs, as a schema-versioned JSON document.

This module holds the document (:class:`Fingerprint`) and reads it back: :func:`load` refuses
anything that is not one, naming the file and the field. Taking one is
:func:`ppaux.skew.snapshot.collect`. The schema is documented in docs/check-skew.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ppaux._version import __version__
from ppaux.errors import PathError, PpauxError
from ppaux.files import InputFileError, read_regular
from ppaux.limits import Limits
from ppaux.sglang import Presence, TransportMatch, WireMatch
from ppaux.sglang_source import Capability
from ppaux.suggestions import RaiseLimit, limit_note
from ppaux.text import cut

__all__ = [
    "PACKAGES",
    "READ_LIMITS",
    "SCHEMA",
    "Fingerprint",
    "FingerprintError",
    "RankInfo",
    "load",
    "load_paths",
    "loads",
]

#: Version of the fingerprint document; another value is refused, not guessed at.
SCHEMA = "ppaux.fingerprint/1"
_SCHEMA_FAMILY = "ppaux.fingerprint/"

#: Distributions whose versions every fingerprint records (None where not installed).
PACKAGES = (
    "sglang",
    "sglang-kernel",
    "sgl-kernel",
    "torch",
    "triton",
    "flashinfer-python",
    "flashinfer-cubin",
    "flashinfer-jit-cache",
    "transformers",
    "nvidia-nccl-cu11",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu13",
    "vllm",
    "ppaux",
)


class FingerprintError(PathError, ValueError):
    """A file that is not a usable fingerprint: ``str()`` is '<path>: <reason>'."""


@dataclass(frozen=True)
class RankInfo:
    """Where a process sits: the launcher's rank facts and, if given, its pipeline stage."""

    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    pp_rank: int | None = None
    pp_size: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The rank facts as a JSON object."""
        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "world_size": self.world_size,
            "pp_rank": self.pp_rank,
            "pp_size": self.pp_size,
        }


@dataclass(frozen=True)
class Fingerprint:
    """One snapshot of a host or rank. ``source`` is the file it was read from, if any."""

    schema: str
    tool_version: str
    time: str
    host: str
    pid: int
    rank: RankInfo
    python: Mapping[str, str]
    platform: Mapping[str, str]
    packages: Mapping[str, str | None]
    torch_build: Mapping[str, Any] | None
    nccl: Mapping[str, str | None]
    driver: Mapping[str, str | None]
    environment: Mapping[str, str]
    sglang: Capability
    source: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The fingerprint document (schema :data:`SCHEMA`)."""
        return {
            "schema": self.schema,
            "tool": {"name": "ppaux", "version": self.tool_version},
            "time": self.time,
            "host": self.host,
            "pid": self.pid,
            "rank": self.rank.to_json(),
            "python": dict(self.python),
            "platform": dict(self.platform),
            "packages": dict(self.packages),
            "torch_build": None if self.torch_build is None else dict(self.torch_build),
            "nccl": dict(self.nccl),
            "driver": dict(self.driver),
            "environment": dict(self.environment),
            "sglang": self.sglang.to_json(),
        }

    def placed(self, **changes: int | None) -> Fingerprint:
        """A copy whose rank facts (rank, world_size, pp_rank, pp_size...) are changed."""
        return dataclasses.replace(self, rank=dataclasses.replace(self.rank, **changes))

    def dumps(self) -> str:
        """The document as indented JSON ending in a newline."""
        return json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n"


# ----------------------------------------------------------------------------------------------
# Loading and validating


class _Invalid(PpauxError):
    """A value of a fingerprint that does not fit the schema; :func:`loads` makes it a
    :class:`FingerprintError`. Not a ValueError: the JSON decoder's own are caught apart."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_TYPE_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


def _kind(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _is(value: object, kind: type | None) -> bool:
    if kind is None:
        return value is None
    if kind is int and isinstance(value, bool):
        return False  # bool is an int subclass, but true is not a rank
    return isinstance(value, kind)


def _need(
    doc: Mapping[str, Any], name: str, kinds: tuple[Any, ...], where: str, *, optional: bool = False
) -> Any:
    """``doc[name]`` if it has one of ``kinds`` (None allowed when in kinds)."""
    label = f"{where}.{name}" if where else name
    if name not in doc:
        if optional:
            return None
        raise _Invalid(f"missing field {label!r}")
    value = doc[name]
    if not any(_is(value, kind) for kind in kinds):
        wanted = " or ".join("null" if k is None else _TYPE_NAMES[k] for k in kinds)
        raise _Invalid(f"field {label!r} must be {wanted}, not {_described(value)}")
    return value


def _described(value: object) -> str:
    """A wrong value's kind and start (``a string "first"``); null is named once."""
    return "null" if value is None else f"{_kind(value)} {_sample(value)}"


def _quoted(text: str) -> str:
    # A key from the file, quoted, cut past 60 characters (escaped when the message is shown).
    return f"'{cut(text, 60)}'"


def _sample(value: object) -> str:
    # The start of a wrong value, as JSON: a list or object is not written out whole first.
    if isinstance(value, (list, dict)):
        return "[...]" if isinstance(value, list) else "{...}"
    return cut(json.dumps(value), 40)


def _string_map(value: Mapping[str, Any], label: str, *, nullable: bool) -> None:
    for key, item in value.items():
        if not (isinstance(item, str) or (nullable and item is None)):
            wanted = "a string or null" if nullable else "a string"
            raise _Invalid(f"field {label}[{_quoted(key)}] must be {wanted}, not {_kind(item)}")


def _string_list(doc: Mapping[str, Any], name: str, where: str) -> None:
    value = _need(doc, name, (list, None), where, optional=True)
    if value is not None and not all(isinstance(v, str) for v in value):
        raise _Invalid(f"field '{where}.{name}' must be a list of strings")


def _bool_map(doc: Mapping[str, Any], name: str, where: str) -> None:
    value = _need(doc, name, (dict, None), where, optional=True)
    if value is not None and not all(isinstance(v, bool) for v in value.values()):
        raise _Invalid(f"field '{where}.{name}' must map names to true or false")


def _capability(doc: Mapping[str, Any]) -> Capability:
    where = "sglang"
    _need(doc, "found", (bool,), where)
    for name in (
        "origin",
        "location",
        "version",
        "match_family",
        "prefix",
        "receiver_prefix",
        "wire_digest",
    ):
        _need(doc, name, (str, None), where, optional=True)
    _need(doc, "non_tensor_values", (str,), where, optional=True)
    for name, verdict in (("transport", Presence), ("match", TransportMatch), ("wire", WireMatch)):
        value = _need(doc, name, (str,), where, optional=True)
        if value is not None and value not in verdict.__members__.values():
            words = ", ".join(verdict)
            raise _Invalid(f"field '{where}.{name}' must be one of {words}, not {_sample(value)}")
    for name in ("sender_checks", "receiver_checks", "scheduler_calls"):
        _bool_map(doc, name, where)
    for name in (
        "logprob_keys",
        "receiver_logprob_keys",
        "receiver_sampling_mask_keys",
        "output_keys",
        "optional_output_keys",
    ):
        _string_list(doc, name, where)
    for name in ("digests", "unknown"):
        value = _need(doc, name, (dict, None), where, optional=True)
        if value is not None:
            _string_map(value, f"{where}.{name}", nullable=False)
    files = _need(doc, "files", (list, None), where, optional=True) or []
    for index, item in enumerate(files):
        if not isinstance(item, dict):
            raise _Invalid(f"field 'sglang.files[{index}]' must be an object")
        for name in ("role", "path", "status"):
            _need(item, name, (str,), f"sglang.files[{index}]")
    live = _need(doc, "live", (dict, None), where, optional=True)
    if live is not None:
        _string_map(live, "sglang.live", nullable=False)
    return Capability.from_json(dict(doc))


def _validate(doc: object) -> Fingerprint:
    if not isinstance(doc, dict):
        raise _Invalid(f"not a ppaux fingerprint: the document is {_kind(doc)}, not an object")
    schema = doc.get("schema")
    if not isinstance(schema, str):
        raise _Invalid(
            "not a ppaux fingerprint (no 'schema' field); make one with 'ppaux fingerprint -o FILE'"
        )
    if schema != SCHEMA:
        if schema.startswith(_SCHEMA_FAMILY):
            raise _Invalid(
                f"fingerprint schema {schema!r} is not supported by ppaux {__version__}, "
                f"which reads {SCHEMA!r}; take the fingerprints with the same ppaux version"
            )
        raise _Invalid(f"not a ppaux fingerprint (schema {schema!r}, expected {SCHEMA!r})")
    tool = _need(doc, "tool", (dict,), "")
    tool_version = _need(tool, "version", (str,), "tool")
    time = _need(doc, "time", (str,), "")
    host = _need(doc, "host", (str,), "")
    pid = _need(doc, "pid", (int,), "")
    rank_doc = _need(doc, "rank", (dict,), "")
    rank = RankInfo(
        **{
            name: _need(rank_doc, name, (int, None), "rank", optional=True)
            for name in ("rank", "local_rank", "world_size", "pp_rank", "pp_size")
        }
    )
    python = _need(doc, "python", (dict,), "")
    _need(python, "version", (str,), "python")
    _string_map(python, "python", nullable=True)
    platform_doc = _need(doc, "platform", (dict,), "")
    _string_map(platform_doc, "platform", nullable=True)
    packages = _need(doc, "packages", (dict,), "")
    _string_map(packages, "packages", nullable=True)
    torch_build = _need(doc, "torch_build", (dict, None), "")
    if torch_build is not None:
        _string_map(torch_build, "torch_build", nullable=True)
    nccl = _need(doc, "nccl", (dict,), "")
    _need(nccl, "version", (str,), "nccl")
    driver = _need(doc, "driver", (dict,), "")
    _need(driver, "version", (str,), "driver")
    environment = _need(doc, "environment", (dict,), "")
    _string_map(environment, "environment", nullable=False)
    capability = _capability(_need(doc, "sglang", (dict,), ""))
    return Fingerprint(
        schema=schema,
        tool_version=tool_version,
        time=time,
        host=host,
        pid=pid,
        rank=rank,
        python=python,
        platform=platform_doc,
        packages=packages,
        torch_build=torch_build,
        nccl=nccl,
        driver=driver,
        environment=environment,
        sglang=capability,
    )


#: The limits reading a fingerprint uses (``check-skew`` refuses ``--limit`` of any other,
#: unless it analyses a tree itself).
READ_LIMITS = ("max_fingerprint_bytes", "max_fingerprint_nesting")


def loads(text: str | bytes, source: str, limits: Limits = Limits()) -> Fingerprint:
    """Parse and validate one fingerprint document (nested at most
    ``limits.max_fingerprint_nesting`` deep); :class:`FingerprintError` names the fault."""
    limit = limits.max_fingerprint_nesting
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FingerprintError(
            source, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        # The decoder stops near Python's recursion limit (about 1,000 levels), far past any
        # default: the document nests deeper than the limit, or than the decoder can follow.
        if limit < _DECODER_DEPTH:
            raise _too_deep(source, limit) from None
        raise FingerprintError(
            source,
            "nests arrays and objects deeper than Python's JSON decoder follows"
            f" (about {_DECODER_DEPTH} levels)",
        ) from None
    except UnicodeDecodeError:
        raise FingerprintError(source, "binary data, not a fingerprint JSON") from None
    except ValueError as exc:
        raise FingerprintError(source, f"not valid JSON: {type(exc).__name__}") from None
    if not _nesting_within(doc, limit):
        raise _too_deep(source, limit)
    try:
        fingerprint = _validate(doc)
    except _Invalid as exc:
        raise FingerprintError(source, exc.reason) from None
    return dataclasses.replace(fingerprint, source=source)


#: Levels of nesting below which Python's JSON decoder never stops on its recursion limit
#: (it stops at about 1,000 levels less the stack already in use).
_DECODER_DEPTH = 500


def _too_deep(source: str, limit: int) -> FingerprintError:
    note = limit_note("max_fingerprint_nesting", limit)
    return FingerprintError(
        source, f"nests arrays and objects deeper than {limit} levels {note}"
    ).suggest(RaiseLimit("max_fingerprint_nesting", limit))


def _nesting_within(doc: object, limit: int) -> bool:
    """Whether no array or object of ``doc`` lies more than ``limit`` levels deep (the
    document itself is level 1), one level at a time."""
    level = [doc] if isinstance(doc, (list, dict)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return False
        below: list[Any] = []
        for value in level:
            items = value.values() if isinstance(value, dict) else value
            below.extend(item for item in items if isinstance(item, (list, dict)))
        level = below
    return True


def load(path: str, limits: Limits = Limits()) -> Fingerprint:
    """Read the fingerprint at ``path`` (at most ``limits.max_fingerprint_bytes``);
    :class:`FingerprintError` for anything unusable."""
    try:
        data = read_regular(
            path, limits.max_fingerprint_bytes, "fingerprint", limit="max_fingerprint_bytes"
        )
    except InputFileError as exc:
        raise FingerprintError(path, exc.reason).suggest(*exc.suggestions) from None
    return loads(data, path, limits)


def load_paths(
    paths: list[str], limits: Limits = Limits()
) -> tuple[list[Fingerprint], list[FingerprintError]]:
    """Fingerprints from files and directories (their ``*.json``, sorted), and the error of
    every input that could not be used; the others are still loaded."""
    import glob

    files: list[str] = []
    problems: list[FingerprintError] = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(glob.escape(path), "*.json")))
            if not found:
                problems.append(FingerprintError(path, "no *.json fingerprints in this directory"))
            files += found
        else:
            files.append(path)
    fingerprints: list[Fingerprint] = []
    for path in files:
        try:
            fingerprints.append(load(path, limits))
        except FingerprintError as exc:
            problems.append(exc)
    return fingerprints, problems
