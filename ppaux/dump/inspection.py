"""``inspect``: describe and check every dump under the given paths, as one :class:`Report`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO

from ppaux.dump.checks import check_dump, predict_pop
from ppaux.dump.dumpfile import collect_inputs, read_dump, read_dump_stream
from ppaux.dump.model import TensorRef
from ppaux.dump.payload import (
    Payload,
    Tally,
    describe_entry,
    find_payloads,
    key_text,
    safe_repr,
)
from ppaux.dump.structure import Dump
from ppaux.dump.trail import culprit_text, read_culprit, read_trail, trail_findings, trail_text
from ppaux.dump.value_walk import walk
from ppaux.errors import DumpError, ReadMismatch, TorchRefuses
from ppaux.files import stdin_hint
from ppaux.limits import Limits
from ppaux.report import (
    Finding,
    FindingsBudget,
    InputProblem,
    Report,
    ReportBuilder,
    Severity,
    Table,
    finding,
)
from ppaux.sglang import MSG_TYPE_KEY
from ppaux.suggestions import limit_note
from ppaux.text import MAX_SHOWN, counted, cut

__all__ = ["describe_dump", "inspect_file", "inspect_paths"]

#: Entries shown per table in the human view; the JSON report lists every entry, up to
#: ``Limits.max_report_entries`` per file. Drawing a table costs about a millisecond per row,
#: and a hostile dict may have a million keys. With the row that counts the rest, a cut table
#: is 1,000 rows: what the text view draws of any table, so that row is never cut itself.
TABLE_ROWS = 999
#: Tables drawn per file in the human view: a hostile file may hold thousands of small tensor
#: dicts, and each table costs milliseconds to draw. The JSON report lists them all.
FILE_TABLES = 20


def describe_dump(
    dump: Dump, payloads: list[Payload], limits: Limits, tally: Tally | None = None
) -> dict[str, Any]:
    """The JSON description of one dump: container facts, payload entries, globals."""
    if tally is None:
        tally = Tally(limits, dump.path)
    tensor_bytes = 0
    described = []
    room = limits.max_report_entries  # entries listed over all the file's tensor dicts
    for payload in payloads:
        listed = itertools.islice(payload.mapping.items(), room)
        entries = [describe_entry(k, v, limits, tally) for k, v in listed]
        room -= len(entries)
        omitted = len(payload.mapping) - len(entries)
        # Every tensor counts, listed or not (bytes only: no description of the rest).
        tensor_bytes += sum(e.get("bytes", 0) for e in entries if e.get("kind") == "tensor")
        if omitted:
            tensor_bytes += sum(
                v.nbytes
                for v in itertools.islice(payload.mapping.values(), len(entries), None)
                if isinstance(v, TensorRef)
            )
        message_type = payload.mapping.get(MSG_TYPE_KEY)
        one: dict[str, Any] = {
            "locator": payload.locator,
            "role": payload.role,
            "message_type": cut(message_type) if isinstance(message_type, str) else None,
            "entries": entries,
            "predicted_pop": predict_pop(payload.mapping) if payload.role != "output" else None,
        }
        if omitted:  # only then, so that other descriptions keep their shape
            one["entries_omitted"] = omitted
        described.append(one)
    capture = dump.capture
    trail = read_trail(capture) if capture is not None else None
    culprit = read_culprit(capture) if capture is not None else None
    return {
        "path": dump.path,
        "container": dump.container,
        "record_prefix": dump.record_prefix,
        "size": dump.size,
        "pickle_bytes": dump.pickle_bytes,
        "pickle_protocol": dump.protocol,
        "capture": _shareable(_plain(capture["meta"])) if capture is not None else None,
        "payloads": described,
        "globals": [{"name": n, "allowed": a} for n, a in dump.globals_seen.items()],
        "storages": len(dump.storages),
        "tensor_bytes": tensor_bytes,
        # Only in captures taken by a checkpoint, so that other descriptions keep their shape.
        **({"trail": trail} if trail is not None else {}),
        **({"culprit": culprit} if culprit is not None else {}),
        # Only where the CRC budget ran out, so that other descriptions keep their shape.
        **(
            {"crc_unchecked": {"records": dump.crc_unchecked[0], "bytes": dump.crc_unchecked[1]}}
            if dump.crc_unchecked[0]
            else {}
        ),
    }


def _shareable(meta: dict[str, Any]) -> dict[str, Any]:
    # The input tensorize rewrote is recorded by its absolute path; a report shows it relative
    # to the working directory (or by its name alone), as it shows every other path.
    from ppaux.files import shareable_path

    source = meta.get("rewritten_from")
    if isinstance(source, str):
        meta = {**meta, "rewritten_from": shareable_path(source)}
    return meta


def _plain(meta: dict[str, Any]) -> dict[str, Any]:
    # Capture metadata holds plain values; anything else is shown by a bounded repr, never
    # trusted (a full repr of a shared structure explodes, and huge ints cannot be printed).
    out = {}
    for k, v in meta.items():
        key = cut(k) if isinstance(k, str) else safe_repr(k)
        if isinstance(v, str):
            out[key] = cut(v, 4 * MAX_SHOWN)  # an exception message may be long
            continue
        plain = isinstance(v, (float, bool, type(None))) or (
            isinstance(v, int) and v.bit_length() <= 128
        )
        out[key] = v if plain else safe_repr(v)
    return out


def inspect_file(
    path: str,
    limits: Limits = Limits(),
    stream: BinaryIO | None = None,
    *,
    release: str | None = None,
) -> tuple[dict[str, Any], list[Finding]]:
    """Read, describe and check one file (or ``stream``, named ``path`` in the report); raise
    :class:`DumpError` if it cannot be read. ``release``: also check output messages' keys
    against that release's (see :func:`inspect_paths`).

    The description lists at most ``limits.max_report_entries`` entries over all the file's
    tensor dicts and the findings at most ``limits.max_findings_per_code`` per code; every
    entry is checked.
    """
    dump = read_dump(path, limits) if stream is None else read_dump_stream(path, stream, limits)
    # A file name may hold anything a directory allows (newlines, bytes that are not UTF-8):
    # the report keeps it as given and every format shows it escaped.
    dump.path = path
    payloads = find_payloads(dump, limits)
    # Walk everything once up front so that a hostile structure fails here, as one clear error.
    for _ in walk(dump.root, limits, path):
        pass
    tally = Tally(limits, path)  # tensor counts shared by the description and the checks
    findings = check_dump(dump, payloads, limits, tally)
    if dump.capture is not None:
        findings += trail_findings(path, dump.capture)
    if release is not None:
        findings += _release_findings(path, payloads, release)
    findings = FindingsBudget(limits).cap(findings)
    return describe_dump(dump, payloads, limits, tally), findings


def _tables(description: dict[str, Any], findings: list[Finding]) -> list[Table]:
    """One table per tensor dict: key, kind, dtype or value, shape, stride, device, bytes."""
    flagged = {
        (f.extra.get("payload", ""), f.key) for f in findings if f.severity is not Severity.INFO
    }
    capture = description["capture"]
    tables = []
    for payload in description["payloads"]:
        rows: list[tuple[str, ...]] = []
        marked: set[tuple[int, int]] = set()
        for entry in payload["entries"][:TABLE_ROWS]:
            if (payload["locator"], entry["key"]) in flagged:
                marked.add((len(rows), 0))
            if entry["kind"] == "tensor":
                rows.append(
                    (
                        entry["key"],
                        entry["subclass"] or entry["tensor_kind"],
                        entry["dtype"],
                        _shape_text(entry),
                        str(tuple(entry["stride"])) if entry["stride"] is not None else "-",
                        entry["device"],
                        str(entry["bytes"]),
                    )
                )
            else:
                shape = str(tuple(entry["shape"])) if "shape" in entry else ""
                rows.append(
                    (
                        entry["key"],
                        entry["type"],
                        entry.get("repr", entry["summary"]),
                        shape,
                        "",
                        "",
                        "",
                    )
                )
        omitted = payload.get("entries_omitted", 0)
        hidden = len(payload["entries"]) + omitted - len(rows)
        if hidden > 0:
            where_rest = (
                "the json format lists all"
                if not omitted
                else f"the json format lists {len(payload['entries'])} (max_report_entries)"
            )
            rows.append((f"... and {counted(hidden, 'more key')}", "", where_rest, "", "", "", ""))
        where = f" {payload['locator']}" if payload["locator"] else ""
        what = (
            _capture_phrase(capture, checkpoint=bool(description.get("trail")))
            if capture and payload["role"] == "capture"
            else f"{payload['role']}"
            if payload["role"] == "output"
            else description["container"]
        )
        keys = len(payload["entries"]) + omitted
        title = f"{description['path']}{where} ({what}; {counted(keys, 'key')})"
        tables.append(
            Table(
                title,
                ("key", "kind", "dtype / value", "shape", "stride", "device", "bytes"),
                tuple(rows),
                frozenset(marked),
            )
        )
    return tables


def _shape_text(entry: dict[str, Any]) -> str:
    """A tensor's shape for the table; a nested tensor's as its parts (their sizes differ)."""
    if entry["shape"] is not None:
        return str(tuple(entry["shape"]))
    parts, dims = entry["nested"]["parts"], entry["nested"]["part_dims"]
    if parts is None:
        return "nested"
    return f"{parts} parts of {dims} dim{'s' if dims != 1 else ''}"


def _capture_phrase(meta: dict[str, Any], *, checkpoint: bool = False) -> str:
    """'capture of <function>: <exception>', and who rewrote it (``ppaux tensorize``), if so;
    ``checkpoint``: a capture taken at a hop before anything raised."""
    if meta.get("rewritten_by") is not None:
        # Judged on its own tensors; what the original call raised is history.
        was = meta.get("original_exception_type")
        raised = (
            f"that raised {was}: {meta.get('original_exception_message')}"
            if was is not None
            else "that raised nothing"
        )
        converted = [k for k in str(meta.get("rewritten_keys") or "").splitlines() if k]
        return (
            f"rewrite of a capture taken at {meta.get('function')} {raised}; "
            f"{meta.get('rewritten_by')} converted {counted(len(converted), 'value')}"
        )
    error = (
        f"{meta.get('exception_type')}: {meta.get('exception_message')}"
        if meta.get("exception_type") is not None
        else "no error yet, taken at a checkpoint"
        if checkpoint
        else "no error"
    )
    return f"capture of {meta.get('function')}: {error}"


def inspect_paths(
    paths: Iterable[str],
    limits: Limits = Limits(),
    *,
    release: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    streams: Mapping[str, BinaryIO] | None = None,
) -> Report:
    """Inspect files and directories; unreadable inputs become problems, the rest still run.

    A path that is a key of ``streams`` (such as ``'<stdin>'``) is read from that stream.

    ``release`` (such as '0.5.23') also checks each output message's keys against that release's
    expected key set. ``progress(done, total)`` is called after each file.
    """
    streams = streams or {}
    paths = list(paths)
    files, problems = collect_inputs(paths, limits, streams)
    report = ReportBuilder(command="inspect", problems=problems)
    descriptions = []
    for index, path in enumerate(files, 1):
        try:
            description, findings = inspect_file(path, limits, streams.get(path), release=release)
        except ReadMismatch as exc:
            # Not a file ppaux could not read: one it will not vouch for, whatever it holds.
            # What the pickle imports before torch stops is said first, whatever follows.
            report.findings += [
                finding(
                    "PP201/imported-before-stop",
                    exc.path,
                    f"the pickle references {name}, which is not on the tensor allowlist; "
                    "torch.load(weights_only=False) would import it (and call it where the "
                    "pickle does) before it stops at what follows",
                    extra={"global": name},
                )
                for name in exc.calls
            ]
            report.findings.append(
                finding(
                    exc.code,
                    exc.path,
                    exc.reason,
                    severity=Severity.ERROR,  # PP118 too: torch's reading could differ
                    suggestions=exc.suggestions,
                    extra={"causes": list(exc.causes)} if isinstance(exc, TorchRefuses) else None,
                )
            )
        except DumpError as exc:
            # Each problem is one line on stderr, whatever the file is called.
            reason = exc.reason
            if exc.path in paths:  # named by the user, not found in a directory
                reason += stdin_hint(exc.path, "cat dump.pt | ppaux inspect -")
            report.problems.append(InputProblem(exc.path, reason, exc.suggestions))
        else:
            descriptions.append(description)
            report.notes += _trail_notes(description)
            report.notes += _attribute_notes(description)
            report.notes += _crc_notes(description, limits)
            report.findings += findings
            tables = _tables(description, findings)
            report.tables += tables[:FILE_TABLES]
            if len(tables) > FILE_TABLES:
                report.notes.append(
                    f"{description['path']}: {len(tables) - FILE_TABLES} more tensor dicts not "
                    "drawn as tables (the json format lists their entries)"
                )
        if progress is not None:
            progress(index, len(files))
    report.data["files"] = descriptions
    if release is not None:
        report.data["release"] = release
    return report.build()


def _crc_notes(description: dict[str, Any], limits: Limits) -> list[str]:
    """'<path>: the CRCs of N storage records (B bytes) were not checked ...': a file with more
    storage bytes than ``max_crc_bytes`` is clean as far as its CRCs were read; say how far."""
    unchecked = description.get("crc_unchecked")
    if not unchecked:
        return []
    return [
        f"{description['path']}: the CRCs of {counted(unchecked['records'], 'storage record')} "
        f"({unchecked['bytes']} bytes) past the first {limits.max_crc_bytes} bytes of storages "
        "were not checked: a change to their data after torch.save wrote them is not seen "
        f"{limit_note('max_crc_bytes', limits.max_crc_bytes)}"
    ]


def _attribute_notes(description: dict[str, Any]) -> list[str]:
    """'<path>: 'key' (tensor) has attributes foo=1 (int), ...': what torch.load sets on a
    tensor beside its data (the json format lists them under the entry's ``attributes``)."""
    notes = []
    for payload in description["payloads"]:
        for entry in payload["entries"][:TABLE_ROWS]:
            attributes = entry.get("attributes")
            if attributes:
                listed = ", ".join(f"{a['name']}={a['value']} ({a['type']})" for a in attributes)
                if entry.get("attributes_omitted"):
                    listed += f", and {entry['attributes_omitted']} more"
                where = f" in {payload['locator']}" if payload["locator"] else ""
                notes.append(
                    f"{description['path']}: {entry['key']!r}{where} is loaded with attributes "
                    f"set on the tensor: {listed}"
                )
    return notes


def _trail_notes(description: dict[str, Any]) -> list[str]:
    """'<path>: trail: ...' and '<path>: culprit: ...' for a capture taken by a checkpoint."""
    notes = []
    meta = description.get("capture") or {}
    path = description["path"]
    if meta.get("rewritten_by") is not None:
        # History, labelled as such: what the original recorded, then what was converted.
        if description.get("trail") is not None:
            notes.append(
                f"{path}: the original's trail (history, not this file's): "
                f"{trail_text(description['trail'])}"
            )
        if description.get("culprit") is not None:
            notes.append(f"{path}: the original's culprit: {culprit_text(description['culprit'])}")
        for key in str(meta.get("rewritten_keys") or "").splitlines():
            if key:
                notes.append(f"{path}: converted to a tensor: {key}")
        return notes
    if description.get("trail") is not None:
        notes.append(f"{path}: trail: {trail_text(description['trail'])}")
    if description.get("culprit") is not None:
        notes.append(f"{path}: culprit: {culprit_text(description['culprit'])}")
    return notes


def _release_findings(path: str, payloads: list[Payload], release: str) -> list[Finding]:
    from ppaux.dump.release_keys import release_key_findings

    found = []
    for payload in payloads:
        message_type = payload.mapping.get(MSG_TYPE_KEY)
        if payload.role == "output" or (
            isinstance(message_type, str) and cut(message_type) != "output"
        ):
            continue
        # Every key, listed in the report or not, as the report shows it.
        keys = [key_text(k) for k in payload.mapping if isinstance(k, str)]
        found += release_key_findings(path, keys, release)
    return found
