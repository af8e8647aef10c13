"""The table of known sglang releases, shipped as package data (``ppaux/data/releases.json``).

Every fact in the table was read from the release wheels on PyPI (``pip download --no-deps
sglang==X``); the tests marked ``wheels`` check it against them. Releases fall into three
families by their auxiliary transport: none up to 0.5.18, the first one in 0.5.19, and the same
file from 0.5.20 to 0.5.23 (only its imports changed). Inside a family the logprob keys of the
output message still change from release to release, and a receiver that indexes a key its
sender does not send fails with ``KeyError``.

Matching is by code, not by version number: a tree is "a release's" when its transport file's
sha256, or the digests of its functions (:mod:`ppaux.sglang_source.digest`), are in the table.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ppaux.sglang.verdicts import TransportMatch

__all__ = [
    "Family",
    "Release",
    "families",
    "family_of",
    "fitting_releases",
    "known_release",
    "match_transport",
    "output_group",
    "release",
    "release_versions",
    "unknown_release",
    "wire_is_release",
]


@dataclass(frozen=True)
class Family:
    """Releases that ship the same auxiliary transport (or none)."""

    name: str
    versions: tuple[str, ...]
    transport: bool
    transport_sha256: str | None
    transport_lines: int | None
    aux_output_defined_in: str | None
    transport_digests: Mapping[str, str]
    wire_digests: Mapping[str, str]


@dataclass(frozen=True)
class Release:
    """The facts of one release that matter to the PP output message."""

    version: str
    family: str
    torch: str | None
    logprob_keys: tuple[str, ...]
    receiver_logprob_keys: tuple[str, ...]
    receiver_sampling_mask_keys: tuple[str, ...]
    output_keys: tuple[str, ...]
    optional_output_keys: tuple[str, ...]
    #: Digests of the scheduler's PP methods on the output path (``SchedulerPPMixin.<name>``),
    #: which change more often than the transport: one set per release, not per family.
    scheduler_digests: Mapping[str, str]
    #: The ``all_gather_group`` argument of the last stage's ``send_tensor_dict`` in
    #: ``SchedulerPPMixin._pp_send_dict_to_next_stage``, as the release's source writes it.
    output_all_gather_group: str


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    text = resources.files("ppaux").joinpath("data/releases.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


@functools.lru_cache(maxsize=1)
def families() -> tuple[Family, ...]:
    """The transport families, oldest first."""
    return tuple(
        Family(
            name=f["name"],
            versions=tuple(f["versions"]),
            transport=f["transport"],
            transport_sha256=f["transport_sha256"],
            transport_lines=f["transport_lines"],
            aux_output_defined_in=f["aux_output_defined_in"],
            transport_digests=dict(f["transport_digests"]),
            wire_digests=dict(f["wire_digests"]),
        )
        for f in _table()["families"]
    )


@functools.lru_cache(maxsize=1)
def _releases() -> dict[str, Release]:
    return {
        version: Release(
            version=version,
            family=r["family"],
            torch=r["torch"],
            logprob_keys=tuple(r["logprob_keys"]),
            receiver_logprob_keys=tuple(r["receiver_logprob_keys"]),
            receiver_sampling_mask_keys=tuple(r["receiver_sampling_mask_keys"]),
            output_keys=tuple(r["output_keys"]),
            optional_output_keys=tuple(r["optional_output_keys"]),
            scheduler_digests=dict(r["scheduler_digests"]),
            output_all_gather_group=r["output_all_gather_group"],
        )
        for version, r in _table()["releases"].items()
    }


def release_versions() -> tuple[str, ...]:
    """Versions the table knows, oldest first."""
    return tuple(_releases())


def known_release(name: str) -> bool:
    """True when ``name`` (such as ``0.5.23``) is a release in the table."""
    return name.strip() in _releases()


def unknown_release(name: str) -> str:
    """What is wrong with ``name``, a release the table lacks, and the releases it knows."""
    return f"unknown sglang release {name!r}; known: {', '.join(release_versions())}"


def _lookup(name: str) -> Release:
    try:
        return _releases()[name.strip()]
    except KeyError:
        raise LookupError(unknown_release(name)) from None


def release(name: str) -> Release:
    """The facts of release ``name``, one :func:`known_release` says is known (``LookupError``
    otherwise: a caller given a release checks it first, and says so in its own error)."""
    return _lookup(name)


def output_group(name: str) -> bool:
    """True when release ``name``'s last stage sends the output message with an attention-TP
    group in its default setup.

    sglang slices every tensor whose element count the group's size divides (``reshape(size,
    -1)[rank]``), even for a group of one rank, which copies a tensor it cannot view. 0.5.20 -
    0.5.23 always pass ``self.attn_tp_group``; 0.5.18 and 0.5.19 pass it unless
    ``enable_dsa_prefill_context_parallel`` is set (off by default), and None then.
    """
    return release(name).output_all_gather_group.split(" if ")[0] != "None"


def family_of(name: str) -> Family:
    """The transport family of release ``name``."""
    wanted = release(name).family
    return next(f for f in families() if f.name == wanted)


def _family_span(names: Iterable[str]) -> str | None:
    """'0.5.19-0.5.23' for families 0.5.19 and 0.5.20-0.5.23, in table order."""
    wanted = set(names)
    versions = [v for f in families() if f.name in wanted for v in f.versions]
    if not versions:
        return None
    return versions[0] if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"


def match_transport(sha256: str, digests: Mapping[str, str]) -> tuple[TransportMatch, str | None]:
    """Whether a transport file is a release's: (verdict, releases it matches).

    The verdict is ``release`` when the file's bytes are a release's, ``functions`` when only
    add, pop and the two Protocols are (the rest of the file, such as its imports, differs), and
    ``modified`` otherwise.
    """
    for family in families():
        if family.transport and family.transport_sha256 == sha256:
            return TransportMatch.RELEASE, family.name
    same = [
        f.name
        for f in families()
        if f.transport and f.transport_digests and dict(f.transport_digests) == dict(digests)
    ]
    if same:
        return TransportMatch.FUNCTIONS, _family_span(same)
    return TransportMatch.MODIFIED, None


def wire_is_release(digests: Mapping[str, str]) -> bool:
    """True when the wire functions' digests are those of a known release."""
    return any(dict(f.wire_digests) == dict(digests) for f in families() if f.wire_digests)


@functools.lru_cache(maxsize=1)
def _spans() -> dict[str, dict[str, dict[str, tuple[int, int]]]]:
    """Release -> file -> qualified function name -> (first line, last line)."""
    table = _table().get("function_spans", {}).get("releases", {})
    return {
        version: {
            file: {name: (int(span[0]), int(span[1])) for name, span in functions.items()}
            for file, functions in files.items()
        }
        for version, files in table.items()
    }


def fitting_releases(file: str, line: int, function: str) -> tuple[str, ...] | None:
    """The releases in whose ``file`` (relative to the ``sglang`` package, such as
    ``srt/managers/scheduler_pp_mixin.py``) line ``line`` lies inside a function named
    ``function``, oldest first; None when the table lists no function of that name in that file
    (a frame it cannot judge). An empty tuple means the line fits no known release.
    """
    listed = False
    fitting = []
    for version, files in _spans().items():
        spans = files.get(file)
        if not spans:
            continue
        for name, (first, last) in spans.items():
            if name == function or name.endswith("." + function):
                listed = True
                if first <= line <= last:
                    fitting.append(version)
                    break
    return tuple(fitting) if listed else None
