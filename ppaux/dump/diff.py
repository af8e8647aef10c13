"""``diff``: how two dumps or captures differ, entry by entry, without torch.

Both files are read with the safe reader (nothing in them runs). Their tensor dicts are paired
(a capture's ``tensors`` and ``output``, or a dict's place in the file) and compared key by key:
entries added and removed, a value's kind (tensor or not), a tensor's dtype, shape, stride,
device, layout and class, and values: a tensor by a SHA-256 digest of the bytes it views, read
from its storage record a block at a time, any other value by value; pop's outcome per side by
:func:`ppaux.dump.checks.predict_pop`. Auxiliary entries' differences are errors (PP601 - PP607).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ppaux.dump.digests import NotCompared, StorageRecords, ValueDigests
from ppaux.dump.model import TensorRef
from ppaux.dump.payload import Payload, Tally, key_text, type_name, value_phrase
from ppaux.dump.structure import Dump
from ppaux.errors import DumpError, nested_past_recursion
from ppaux.files import shareable_path
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
from ppaux.sglang import OUTPUT_PREFIX

__all__ = ["diff_dumps", "diff_paths"]

_EVERYDAY_META = ("time", "host", "pid", "rewritten_time")


@dataclass
class _Side:
    name: str
    dump: Dump
    payloads: list[Payload]
    values: ValueDigests
    #: Tensor counts of shared values, worked out once per dump (see Tally).
    tally: Tally


def diff_paths(a: str, b: str, limits: Limits = Limits()) -> Report:
    """Compare the dumps at ``a`` and ``b``; unreadable ones become the report's problems."""
    from ppaux.dump.dumpfile import read_dump
    from ppaux.dump.payload import find_payloads
    from ppaux.dump.value_walk import walk

    report = ReportBuilder(command="diff")
    dumps = []
    for path in (a, b):
        try:
            dump = read_dump(path, limits)
            # In inspect's order: a file with too many tensor dicts or tensors is refused by
            # the search for them, before a walk of everything it holds.
            find_payloads(dump, limits)
            any(False for _ in walk(dump.root, limits, path))  # walked whole: a bad one fails
        except DumpError as exc:  # named as the user gave it: the error line quotes it
            report.problems.append(InputProblem.of(exc, path))
            continue
        dumps.append(dump)
    if report.problems:
        return report.build()
    try:
        return diff_dumps(dumps[0], dumps[1], limits)
    except DumpError as exc:  # a limit met while finding the tensor dicts (max_payloads, ...)
        report.problems.append(InputProblem.of(exc))
        return report.build()
    except RecursionError:  # nested within max_depth, deeper than the comparison can go
        deeper = a if _nesting(dumps[0].root) >= _nesting(dumps[1].root) else b
        error = nested_past_recursion(deeper, limits.max_depth, "compare")
        report.problems.append(InputProblem(error.path, error.reason))
        return report.build()


def _nesting(root: object) -> int:
    """How deep containers nest in ``root``, counted without recursing (it is asked of a dump
    too deep to compare by recursion); each container once, so shared and cyclic values end."""
    deepest, stack, seen = 0, [(root, 1)], set()
    while stack:
        value, depth = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, (list, tuple, set, frozenset)):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def diff_dumps(a: Dump, b: Dump, limits: Limits = Limits()) -> Report:
    """Compare two dumps already read (see :func:`diff_paths`)."""
    from ppaux.dump.payload import find_payloads

    report = ReportBuilder(command="diff")
    sides = []
    records = []
    for dump in (a, b):
        record = StorageRecords(dump)
        records.append(record)
        # Reports show a file name escaped (it may hold anything); the file is read by its name.
        sides.append(
            _Side(
                dump.path,
                dump,
                find_payloads(dump, limits),
                ValueDigests(record, limits),
                Tally(limits, dump.path),
            )
        )
    # Findings past max_findings_per_code of a code are counted, not built, report-wide.
    budget = FindingsBudget(limits)
    try:
        pairs = _pairs(sides[0].payloads, sides[1].payloads)
        compared = []
        for left, right in pairs:
            if left is None or right is None:
                only, side = (left, "A") if left is not None else (right, "B")
                assert only is not None
                aux = _has_aux(only)
                report.findings.append(
                    finding(
                        "PP607",
                        sides[1].name if side == "B" else sides[0].name,
                        f"{only.locator or 'the top-level dict'}: only in {side}",
                        severity=Severity.ERROR if aux else Severity.INFO,
                    )
                )
                continue
            listed, total, found = _compare(sides, left, right, limits, budget)
            report.findings += [_placed(f, left) for f in found]
            # Every entry is compared; the report lists up to max_report_entries of them, as
            # inspect does, and counts the rest.
            one: dict[str, Any] = {
                "a": left.locator,
                "b": right.locator,
                "role": left.role,
                "entries": listed,
                "pop": _pop(sides, left, right, report),
            }
            if total > len(listed):
                one["entries_omitted"] = total - len(listed)
            compared.append(one)
            report.tables.append(_table(sides, left, right, listed))
        report.findings += _meta(a, b, sides[1].name)
        report.findings += budget.counted(sides[1].name)
    finally:
        for record in records:
            record.close()
    # A hostile dict of a hundred thousand keys would otherwise give as many findings: list the
    # first of each code, as inspect does, and one finding that counts the rest.
    report.findings = budget.cap(report.findings)
    report.data["diff"] = {"a": sides[0].name, "b": sides[1].name, "dicts": compared}
    return report.build()


def _placed(item: Finding, payload: Payload) -> Finding:
    # Findings name the dict key itself; where the dict sits in the file goes to extra.payload.
    if not payload.locator:
        return item
    extra = item.extra.copy()
    extra["payload"] = payload.locator
    return dataclasses.replace(item, extra=extra)


def _has_aux(payload: Payload) -> bool:
    return payload.role == "output" or any(
        isinstance(k, str) and k.startswith(OUTPUT_PREFIX) for k in payload.mapping
    )


def _pairs(left: list[Payload], right: list[Payload]) -> list[tuple[Any, Any]]:
    """Pair the dicts of two dumps: by role for captures, else by place; one each: together."""
    messages = [[p for p in side if p.role != "output"] for side in (left, right)]
    outputs = [[p for p in side if p.role == "output"] for side in (left, right)]
    pairs: list[tuple[Any, Any]] = []
    if len(messages[0]) == 1 and len(messages[1]) == 1:
        pairs.append((messages[0][0], messages[1][0]))
    else:
        by_place = {p.locator: p for p in messages[1]}
        for p in messages[0]:
            pairs.append((p, by_place.pop(p.locator, None)))
        pairs += [(None, p) for p in by_place.values()]
    if outputs[0] or outputs[1]:
        pairs.append((outputs[0][0] if outputs[0] else None, outputs[1][0] if outputs[1] else None))
    return pairs


def _is_aux(payload: Payload, key: object) -> bool:
    return payload.role == "output" or (isinstance(key, str) and key.startswith(OUTPUT_PREFIX))


def _summary(value: object, limits: Limits, tally: Tally) -> str:
    if isinstance(value, TensorRef):
        kind = "" if value.kind == "dense" else f"{value.kind} "
        sub = f" ({value.subclass})" if value.subclass else ""
        shape: object = tuple(value.shape)
        if value.kind == "nested":  # no shape: its parts (the buffer's shape is not its own)
            parts, dims = value.nested_layout
            shape = f"({parts if parts is not None else '?'} parts, {dims or '?'}-d each)"
        return f"{kind}{value.dtype} {shape} {value.device}{sub}"
    if isinstance(value, (str, int, float, bool, type(None))):
        from ppaux.dump.payload import safe_repr

        return safe_repr(value, 40)
    return value_phrase(value, limits, tally)


def _bounded(text: str, limit: int = 200) -> str:
    # A key may be megabytes long (a hostile file): reports show its start.
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _identity(key: object) -> str:
    # Keys are matched by kind and value; the reader's stand-ins compare by identity.
    if isinstance(key, str):
        return "s" + key
    if isinstance(key, int):  # in hex: Python refuses decimal past 4300 digits
        return f"{type(key).__name__}:{key:x}"
    if isinstance(key, (float, complex, bytes, type(None))):
        return f"{type(key).__name__}:{key!r}"
    return f"{type_name(key)}@{id(key)}"


def _compare(
    sides: list[_Side], left: Payload, right: Payload, limits: Limits, budget: FindingsBudget
) -> tuple[list[dict[str, Any]], int, list[Finding]]:
    """The listed entries (up to ``max_report_entries``), how many entries were compared, and
    the findings built. Every entry is compared; one past the listed ones whose findings would
    only be counted is not described at all."""
    a, b = sides
    right_keys = {_identity(k): k for k in right.mapping}
    left_keys = {_identity(k): k for k in left.mapping}
    order = list(left.mapping) + [k for k in right.mapping if _identity(k) not in left_keys]
    entries: list[dict[str, Any]] = []
    found: list[Finding] = []
    for key in order:
        identity = _identity(key)
        in_a = identity in left_keys
        in_b = identity in right_keys
        listed = len(entries) < limits.max_report_entries
        if not listed and not (in_a and in_b):
            code = "PP602" if in_a else "PP601"
            if budget.full(code):
                budget.take(code)  # counted, and nothing to describe
                continue
        aux = _is_aux(left if in_a else right, key)
        severity = Severity.ERROR if aux else Severity.INFO
        entry: dict[str, Any] = {"key": "", "aux": aux, "status": "same", "changes": []}

        def describe(
            entry: dict[str, Any] = entry, key: str = key, identity: str = identity
        ) -> str:
            # The key's text and both values' summaries, for a listed entry or a finding built.
            if not entry["key"]:
                entry["key"] = _bounded(key_text(key))
                if identity in left_keys:
                    entry["a"] = _summary(left.mapping[key], limits, a.tally)
                if identity in right_keys:
                    entry["b"] = _summary(right.mapping[right_keys[identity]], limits, b.tally)
            return str(entry["key"])

        if listed or not (in_a and in_b):
            describe()
        where = entry["key"]
        if not in_b:
            entry["status"] = "removed"
            if budget.take("PP602"):
                found.append(
                    finding("PP602", a.name, f"only in A ({entry['a']})", where, severity=severity)
                )
        elif not in_a:
            entry["status"] = "added"
            if budget.take("PP601"):
                found.append(
                    finding("PP601", b.name, f"only in B ({entry['b']})", where, severity=severity)
                )
        else:
            va, vb = left.mapping[key], right.mapping[right_keys[identity]]
            found += _compare_values(sides, entry, describe, va, vb, severity, budget)
        if listed:
            entries.append(entry)
    return entries, len(order), found


def _compare_values(
    sides: list[_Side],
    entry: dict[str, Any],
    describe: Callable[[], str],
    va: object,
    vb: object,
    severity: Severity,
    budget: FindingsBudget,
) -> list[Finding]:
    # describe() fills the entry's key and summaries and gives the key's text: called only for
    # a finding that is built (an entry past the listed ones is otherwise never described).
    a, b = sides
    path = b.name
    ta, tb = isinstance(va, TensorRef), isinstance(vb, TensorRef)
    if ta != tb or (not ta and type_name(va) != type_name(vb)):
        entry["status"] = "kind"
        entry["changes"].append("kind")
        # The finding is about the side that holds the non-tensor where the other has a tensor
        # (the value rank 0 refuses); between two non-tensors, about B, the changed one.
        about = a.name if tb and not ta else path
        if not budget.take("PP603"):
            return []
        where = describe()
        return [
            finding(
                "PP603", about, f"{entry['a']} in A, {entry['b']} in B", where, severity=severity
            )
        ]
    found = []
    comparable = True
    if isinstance(va, TensorRef) and isinstance(vb, TensorRef):  # ta, and so tb
        changes = [
            (name, getattr(va, name), getattr(vb, name))
            for name in (
                "kind",
                "dtype",
                "shape",
                "stride",
                "offset",
                "device",
                "layout",
                "subclass",
            )
            if getattr(va, name) != getattr(vb, name)
        ]
        layout_same = all(n not in ("kind", "dtype", "shape", "layout") for n, _, _ in changes)
        strides_agree = not any(n == "stride" for n, _, _ in changes) or (
            va.contiguous and vb.contiguous
        )
        comparable = layout_same and strides_agree
        shown = [(n, x, y) for n, x, y in changes if n != "offset"]
        if shown:
            entry["status"] = "changed"
            entry["changes"] += [n for n, _, _ in shown]
            if budget.take("PP604"):
                text = ", ".join(f"{n} {_plain(x)} -> {_plain(y)}" for n, x, y in shown)
                found.append(finding("PP604", path, text, describe(), severity=severity))
    if not comparable:
        return found
    try:
        da = a.values.tensor(va) if isinstance(va, TensorRef) else a.values.digest(va)
        db = b.values.tensor(vb) if isinstance(vb, TensorRef) else b.values.digest(vb)
    except NotCompared as exc:
        entry["changes"].append("not compared")
        if not budget.take("PP608"):
            return found
        return [*found, finding("PP608", path, f"values not compared: {exc}", describe())]
    if da != db:
        entry["status"] = "changed"
        entry["changes"].append("values")
        if budget.take("PP605"):
            what = (
                f"{_tensors_compared(va, vb)} differ (sha256 {da[:12]}... in A, {db[:12]}... in B)"
                if isinstance(va, TensorRef) and isinstance(vb, TensorRef)
                else f"the values differ ({_short(va)} in A, {_short(vb)} in B)"
            )
            found.append(finding("PP605", path, what, describe(), severity=severity))
    return found


def _tensors_compared(va: TensorRef, vb: TensorRef) -> str:
    """What the digests of two tensors stand for: the bytes each views, or, where one is a
    negative or conjugate view, the values torch.load gives (its bytes are not its values)."""
    names = {"neg": "negative", "conj": "conjugate"}
    views = [
        f"{side} is a {' '.join(names.get(b, b) for b in v.bits)} view"
        for side, v in (("A", va), ("B", vb))
        if v.bits
    ]
    if not views:
        return "the tensors' bytes"
    return f"the values the tensors read ({', '.join(views)}: compared by value)"


def _plain(value: object) -> str:
    if isinstance(value, tuple):
        return str(tuple(value))
    return str(value)


def _short(value: object) -> str:
    from ppaux.dump.payload import safe_repr

    return safe_repr(value, 40)


def _pop(
    sides: list[_Side], left: Payload, right: Payload, report: ReportBuilder
) -> dict[str, Any] | None:
    from ppaux.dump.checks import predict_pop

    if left.role == "output":
        return None
    outcomes = [predict_pop(left.mapping), predict_pop(right.mapping)]
    if outcomes[0] == outcomes[1] and outcomes[0]["outcome"] == "error":
        report.findings.append(
            finding(
                "PP610",
                sides[1].name,
                f"A and B: pop raises {outcomes[0]['error_type']}: {outcomes[0]['error']}",
                sglang_error=outcomes[0]["error"],
            )
        )
    elif outcomes[0] != outcomes[1]:

        def said(o: dict[str, Any]) -> str:
            if o["outcome"] == "error":
                return f"pop raises {o['error_type']}: {o['error']}"
            if o["outcome"] == "waits":
                return (
                    "pop never runs (the sender cannot send a sparse, quantized or nested tensor)"
                )
            return "pop succeeds" if o["outcome"] == "ok" else "pop finds no auxiliary entries"

        failing = "A" if outcomes[0]["outcome"] in ("error", "waits") else "B"
        report.findings.append(
            finding(
                "PP606",
                sides[0 if failing == "A" else 1].name,  # the side that fails is the one to fix
                f"A: {said(outcomes[0])}; B: {said(outcomes[1])}",
                sglang_error=outcomes[0 if failing == "A" else 1]["error"],
            )
        )
    return {"a": outcomes[0], "b": outcomes[1]}


def _meta(a: Dump, b: Dump, shown_b: str) -> list[Finding]:
    ca, cb = a.capture, b.capture
    if ca is None or cb is None:
        return []
    ma, mb = ca["meta"], cb["meta"]
    keys = list(ma) + [k for k in mb if k not in ma]
    differ = [
        str(k)
        for k in keys
        if isinstance(k, str)
        and k not in _EVERYDAY_META
        and _meta_value(ma.get(k)) != _meta_value(mb.get(k))
    ]
    if not differ:
        return []
    message = f"capture metadata differs in {', '.join(differ)}"
    rewritten = mb.get("rewritten_by")
    if isinstance(rewritten, str):
        source = shareable_path(str(mb.get("rewritten_from")))
        message += f" (B: {key_text(rewritten)} rewrote {key_text(source)})"
    return [finding("PP609", shown_b, message)]


def _meta_value(value: object) -> Any:
    # Metadata comes from the file: only plain values compare by value.
    if isinstance(value, (str, int, float, bool, type(None))):
        return (type(value).__name__, value)
    return ("other", id(value))


def _table(
    sides: list[_Side], left: Payload, right: Payload, entries: list[dict[str, Any]]
) -> Table:
    rows: list[tuple[str, ...]] = []
    marked = set()
    for entry in entries:
        if entry["status"] != "same":
            marked.add((len(rows), 3))
        difference = {
            "same": "same",
            "added": "only in B",
            "removed": "only in A",
            "kind": "kind",
        }.get(entry["status"], ", ".join(entry["changes"]))
        if entry["status"] == "same" and entry["changes"]:
            difference = ", ".join(entry["changes"])
        rows.append((entry["key"], entry.get("a", "-"), entry.get("b", "-"), difference))
    where = left.locator or "top level"
    if right.locator != left.locator:
        where = f"{left.locator or 'top level'} / {right.locator or 'top level'}"
    title = f"A {sides[0].name} vs B {sides[1].name}: {where}"
    return Table(title, ("key", "A", "B", "difference"), tuple(rows), frozenset(marked))
