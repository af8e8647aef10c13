"""A pipeline stage as check-skew sees it: one fingerprint, its label, role and comparable facts.

Facts are plain strings so that stages compare with ``==`` and the matrix shows exactly what was
compared. ``None`` means unknown: unknown values are never reported as differences.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ppaux.sglang import Presence, TransportMatch, WireMatch, release, release_versions
from ppaux.skew.fingerprint import Fingerprint
from ppaux.text import counted

__all__ = [
    "FACTS",
    "MUST_AGREE_ENV",
    "PACKAGE_FACTS",
    "Fact",
    "MissingRank",
    "Stage",
    "env_reader",
    "env_value",
    "keys_label",
    "make_stages",
    "package_reader",
    "python_minor",
    "reference_value",
    "span",
]

#: Variables both ends of a PP link must agree on, with sglang's default (sglang/srt/environ.py).
MUST_AGREE_ENV = {
    "SGLANG_PP_SKIP_PURE_CHUNKED_OUTPUT_COMM": "false",
    "SGLANG_ENABLE_PP_SPEC": "false",
}
# sglang's EnvBool spellings (srt/environ.py, 0.5.18 - 0.5.23).
_TRUE = {"true", "1", "yes", "y"}
_FALSE = {"false", "0", "no", "n"}


@dataclass(frozen=True)
class MissingRank:
    """A rank whose fingerprint never arrived (distributed mode), and what is known of it."""

    rank: int
    host: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        """The missing rank as a JSON object."""
        return {"rank": self.rank, "host": self.host, "message": self.message}


@dataclass(frozen=True)
class Stage:
    """One fingerprint in a comparison. ``path`` is what findings name (a file, or a rank)."""

    label: str
    path: str
    fingerprint: Fingerprint

    @property
    def role(self) -> str | None:
        """first, last, middle or only (a one-stage pipeline); None when the stage is unknown."""
        rank = self.fingerprint.rank
        if rank.pp_rank is None or rank.pp_size is None:
            return None
        if rank.pp_size == 1:
            return "only"
        if rank.pp_rank == 0:
            return "first"
        if rank.pp_rank == rank.pp_size - 1:
            return "last"
        return "middle"

    @property
    def sends(self) -> bool:
        """True for the last stage, and for any stage whose place is unknown."""
        return self.role in (None, "last")

    @property
    def receives(self) -> bool:
        """True for every stage but the last: each reads the output message (and its logprobs).

        The last stage sends the output message to the first, which pops the auxiliary keys and
        forwards the rest along the pipeline, so middle stages index the logprob keys too.
        """
        return self.role in (None, "first", "middle")

    @property
    def pops(self) -> bool:
        """True for the first stage, the only one that pops auxiliary output, or when unknown."""
        return self.role in (None, "first")

    def summary(self) -> dict[str, Any]:
        """The stage's fingerprint summary and capability verdicts for the JSON report."""
        fp = self.fingerprint
        return {
            "label": self.label,
            "path": self.path,
            "host": fp.host,
            "pid": fp.pid,
            "time": fp.time,
            "rank": fp.rank.to_json(),
            "role": self.role,
            "python": dict(fp.python),
            "platform": dict(fp.platform),
            "packages": {k: v for k, v in fp.packages.items() if v is not None},
            "torch_build": None if fp.torch_build is None else dict(fp.torch_build),
            "nccl": fp.nccl.get("version"),
            "driver": fp.driver.get("version"),
            "fingerprint": {"schema": fp.schema, "ppaux": fp.tool_version},
            "capability": {
                **fp.sglang.verdicts(),
                "logprob_key_set": keys_label(fp.sglang.logprob_keys),
            },
        }


def reference_value(
    stages: Sequence[Stage],
    value: Callable[[Fingerprint], str | None],
    baseline: Fingerprint | None,
) -> str | None:
    """What a fact is compared with: the baseline's value, else the most common one.

    Ties go to the value of the earliest stage in pipeline order; None when nobody knows it.
    """
    if baseline is not None:
        ref = value(baseline)
        if ref is not None:
            return ref
    values = [v for v in (value(s.fingerprint) for s in stages) if v is not None]
    if not values:
        return None
    counts = Counter(values)
    top = max(counts.values())
    return next(v for v in values if counts[v] == top)


def span(labels: Sequence[str], limit: int = 3) -> str:
    """'a, b, c' or 'a, b, c and 5 more'."""
    if len(labels) <= limit:
        return ", ".join(labels)
    return f"{', '.join(labels[:limit])} and {len(labels) - limit} more"


def _base_label(fp: Fingerprint, fallback: str) -> str:
    rank = fp.rank
    if rank.pp_rank is not None:
        return f"pp{rank.pp_rank}"
    if rank.rank is not None:
        return f"rank{rank.rank}"
    return fallback


def make_stages(fingerprints: Sequence[Fingerprint], paths: Sequence[str]) -> list[Stage]:
    """Stages in pipeline order (then rank, then path), each with a unique label.

    A label is ``pp<N>``, else ``rank<N>``, else the file's stem; several ranks of one pipeline
    stage (tensor parallelism) become ``pp<N>.r<rank>``, and any label still shared gets ``#2``,
    ``#3``, ... in order.
    """
    order = sorted(
        range(len(fingerprints)),
        key=lambda i: (
            _none_last(fingerprints[i].rank.pp_rank),
            _none_last(fingerprints[i].rank.rank),
            paths[i],
        ),
    )
    bases = [_base_label(fingerprints[i], _stem(paths[i])) for i in order]
    counts = Counter(bases)
    labels = []
    for base, i in zip(bases, order, strict=True):
        rank = fingerprints[i].rank.rank
        shared = counts[base] > 1 and base.startswith("pp") and rank is not None
        labels.append(f"{base}.r{rank}" if shared else base)
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return [Stage(unique[position], paths[i], fingerprints[i]) for position, i in enumerate(order)]


def _none_last(value: int | None) -> tuple[int, int]:
    return (1, 0) if value is None else (0, value)


def _stem(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-5] if name.endswith(".json") else name


def env_reader(name: str) -> Callable[[Fingerprint], str | None]:
    """Reads variable ``name``'s effective value (:func:`env_value`) from a fingerprint."""

    def read(fp: Fingerprint) -> str | None:
        return env_value(fp, name)

    return read


def package_reader(name: str) -> Callable[[Fingerprint], str | None]:
    """Reads package ``name``'s version from a fingerprint (None where it is not installed)."""

    def read(fp: Fingerprint) -> str | None:
        return fp.packages.get(name)

    return read


def env_value(fp: Fingerprint, name: str) -> str:
    """A variable's effective value: booleans as sglang parses them, unset as its default."""
    raw = fp.environment.get(name)
    if name in MUST_AGREE_ENV:
        if raw is None:
            return f"{MUST_AGREE_ENV[name]} (unset)"
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return "true"
        if lowered in _FALSE:
            return "false"
        return raw
    return "unset" if raw is None else raw


@functools.lru_cache(maxsize=256)
def keys_label(keys: tuple[str, ...] | None) -> str | None:
    """'14 keys (0.5.18-0.5.19)': the count and the releases that send exactly that set."""
    if keys is None:
        return None
    same = [v for v in release_versions() if set(release(v).logprob_keys) == set(keys)]
    where = f" ({same[0]}{'-' + same[-1] if len(same) > 1 else ''})" if same else " (no release)"
    return f"{counted(len(keys), 'key')}{where}"


def _checks(checks: dict[str, bool] | None, names: Sequence[str]) -> str | None:
    if checks is None:
        return None
    missing = [n for n in names if not checks.get(n, False)]
    return "all" if not missing else "no " + ", no ".join(missing)


def _match(fp: Fingerprint) -> str | None:
    cap = fp.sglang
    if cap.match is TransportMatch.UNKNOWN:
        return None
    if cap.match is TransportMatch.RELEASE:
        return f"release {cap.match_family}"
    if cap.match is TransportMatch.FUNCTIONS:
        return f"functions of {cap.match_family}"
    return cap.match.value


def _minor(version: str | None) -> str | None:
    if not version:
        return None
    return ".".join(version.split(".")[:2])


@dataclass(frozen=True)
class Fact:
    """A row of the matrix: how to read it from a fingerprint; ``identity`` rows never differ."""

    name: str
    value: Callable[[Fingerprint], str | None]
    identity: bool = False


def _rank(fp: Fingerprint) -> str | None:
    r = fp.rank
    if r.rank is None:
        return None
    return f"{r.rank}/{r.world_size}" if r.world_size is not None else str(r.rank)


def _pp(fp: Fingerprint) -> str | None:
    r = fp.rank
    if r.pp_rank is None:
        return None
    return f"{r.pp_rank}/{r.pp_size}" if r.pp_size is not None else str(r.pp_rank)


def _sglang(fp: Fingerprint) -> str:
    if not fp.sglang.found:
        return fp.packages.get("sglang") or "not installed"
    return fp.sglang.version or fp.packages.get("sglang") or "unknown version"


def _transport(fp: Fingerprint) -> str | None:
    transport = fp.sglang.transport
    return None if transport is Presence.UNKNOWN else transport.value


def _present(fp: Fingerprint, value: str | None) -> str | None:
    return value if fp.sglang.transport is Presence.PRESENT else None


def _wire(fp: Fingerprint) -> str | None:
    cap = fp.sglang
    if cap.wire_digest is None:
        return None if cap.wire is WireMatch.UNKNOWN else cap.wire.value
    return f"{cap.wire.value} {cap.wire_digest[:8]}"


def _torch(fp: Fingerprint) -> str | None:
    return fp.packages.get("torch") or (fp.torch_build or {}).get("version")


def _cuda(fp: Fingerprint) -> str | None:
    build = fp.torch_build
    if build is None:
        return None
    return build.get("cuda") or ("ROCm " + build["hip"] if build.get("hip") else "none (CPU)")


def _known(value: str | None) -> str | None:
    return None if value in (None, "unknown") else value


#: The matrix rows, in order; check-skew compares every non-identity row.
FACTS: tuple[Fact, ...] = (
    Fact("host", lambda fp: fp.host, identity=True),
    Fact("rank", _rank, identity=True),
    Fact("pp stage", _pp, identity=True),
    Fact("sglang", _sglang),
    Fact("transport", _transport),
    Fact("release match", _match),
    Fact("prefix", lambda fp: _present(fp, fp.sglang.prefix)),
    Fact(
        "sender checks",
        lambda fp: _present(
            fp, _checks(fp.sglang.sender_checks, ("names", "tensors", "duplicates"))
        ),
    ),
    Fact(
        "receiver checks", lambda fp: _present(fp, _checks(fp.sglang.receiver_checks, ("tensors",)))
    ),
    Fact("logprob keys", lambda fp: keys_label(fp.sglang.logprob_keys)),
    Fact("wire", _wire),
    Fact("torch", _torch),
    Fact("CUDA (torch)", _cuda),
    Fact("NCCL", lambda fp: _known(fp.nccl.get("version"))),
    Fact("driver", lambda fp: _known(fp.driver.get("version"))),
    Fact(
        "Python",
        lambda fp: f"{fp.python.get('version')} {fp.python.get('implementation', '')}".strip(),
    ),
    Fact("ppaux", lambda fp: fp.tool_version),
)

#: Packages compared by PP324 (those not already rows of their own).
PACKAGE_FACTS = ("sglang-kernel", "sgl-kernel", "flashinfer-python", "triton", "transformers")


def python_minor(fp: Fingerprint) -> str | None:
    """'3.11' from the Python version."""
    return _minor(fp.python.get("version"))
