"""The trail and culprit a ppaux capture carries (see :mod:`ppaux.dump.capture_format`).

Both come from a file and are treated as untrusted: only plain values of the expected types
are kept, every text is escaped for one-line output, and a malformed record is simply absent.
:func:`trail_findings` turns them into the findings PP506 (a named culprit, with its source
location), PP507 (bounded, not named) and PP508 (rank 0 received the message dirty).
"""

from __future__ import annotations

from typing import Any

from ppaux.report import DumpExtra, Finding, Location

__all__ = [
    "culprit_text",
    "is_rewrite",
    "read_culprit",
    "read_trail",
    "trail_findings",
    "trail_text",
]

_MAX_HOPS = 32
_HOP_FIELDS = ("hop", "at", "state")
_CULPRIT_TEXT = ("function", "file", "code", "how", "write_file", "write_function")
_CULPRIT_INT = ("line", "write_line")


def _text(value: object, limit: int = 500) -> str | None:
    if isinstance(value, str):
        return value[:limit]
    return None


def read_trail(record: dict[Any, Any]) -> list[dict[str, Any]] | None:
    """The capture's trail as a list of {hop, at, state, keys}, or None when absent or bad."""
    raw = record.get("trail")
    if not isinstance(raw, list) or not raw:
        return None
    hops = []
    for item in raw[:_MAX_HOPS]:
        if not isinstance(item, dict):
            return None
        hop: dict[str, Any] = {name: _text(item.get(name)) for name in _HOP_FIELDS}
        if None in hop.values():
            return None
        keys = item.get("keys")
        hop["keys"] = (
            [_text(k) for k in keys[:_MAX_HOPS] if isinstance(k, str)]
            if isinstance(keys, list)
            else []
        )
        hops.append(hop)
    return hops


def read_culprit(record: dict[Any, Any]) -> dict[str, Any] | None:
    """The capture's culprit (function, file, line, code, how, between, write_*), or None."""
    raw = record.get("culprit")
    if not isinstance(raw, dict):
        return None
    out: dict[str, Any] = {name: _text(raw.get(name)) for name in _CULPRIT_TEXT}
    for name in _CULPRIT_INT:
        value = raw.get(name)
        ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 31
        out[name] = value if ok else None
    between = raw.get("between")
    if isinstance(between, list) and len(between) == 2:
        out["between"] = [_text(b) for b in between]
    else:
        out["between"] = [None, None]
    return out


def is_rewrite(record: dict[Any, Any]) -> bool:
    """Whether ``ppaux tensorize`` rewrote this capture (its metadata names the rewriter)."""
    meta = record.get("meta")
    return isinstance(meta, dict) and isinstance(meta.get("rewritten_by"), str)


def trail_text(trail: list[dict[str, Any]]) -> str:
    """One line: 'add clean > prepare clean > send_dict dirty (scores: list)'."""
    parts = []
    for hop in trail:
        keys = f" ({', '.join(hop['keys'])})" if hop["keys"] else ""
        parts.append(f"{hop['hop']} {hop['state']}{keys}")
    return " > ".join(parts)


def culprit_text(culprit: dict[str, Any]) -> str:
    """One line: the function, where it is, whether it is release code, and the written line."""
    if culprit["function"] is None:
        return "not found on the path (the next dirty message is traced)"
    text = f"{culprit['function']} at {culprit['file']}:{culprit['line']}"
    if culprit["code"] is not None:
        text += f" ({_CODE.get(culprit['code'], culprit['code'])})"
    if culprit["write_line"] is not None:
        text += f", wrote it at line {culprit['write_line']}"
    return text


_CODE = {
    "outside": "not sglang's code",
    "modified": "sglang's code, not the release's",
    "release": "release code",
    "sglang": "sglang's code, no release digest to compare",
}


def trail_findings(path: str, record: dict[Any, Any]) -> list[Finding]:
    """PP506 / PP507 / PP508 for a capture that carries a trail; [] otherwise, and [] for a
    capture ``ppaux tensorize`` rewrote: its trail is the original's history, not its own."""
    from ppaux.report import finding

    trail = read_trail(record)
    if trail is None or is_rewrite(record):
        return []
    dirty = next((h for h in trail if h["state"] == "dirty"), None)
    if dirty is None:
        return []
    what = ", ".join(dirty["keys"]) or "a non-tensor value"
    culprit = read_culprit(record)
    extra: DumpExtra = {"trail": [h["hop"] + ":" + h["state"] for h in trail]}
    if dirty["hop"] == "recv":
        return [
            finding("PP508", path, f"{what} already in the message when {dirty['at']}", extra=extra)
        ]
    clean = [h for h in trail[: trail.index(dirty)] if h["state"] == "clean"]
    after = clean[-1]["at"] if clean else "the start of the message"
    span = f"{what} entered between {after} and {dirty['at']}"
    if culprit is None or culprit["function"] is None:
        return [finding("PP507", path, span, extra=extra)]
    location = None
    line = culprit["write_line"] or culprit["line"]
    file = culprit["write_file"] or culprit["file"]
    if line is not None and file is not None:
        function = culprit["write_function"] or culprit["function"]
        location = Location.of({"file": file, "line": line, "function": function})
    extra["culprit"] = culprit_text(culprit)
    return [
        finding(
            "PP506", path, f"{span}, in {culprit_text(culprit)}", extra=extra, location=location
        )
    ]
