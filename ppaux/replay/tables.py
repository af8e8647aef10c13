"""The human view of a replay: one summary table (a row per payload) and, for a few dumps, a
table per payload of what was sent, what was received and whether it came back bit-identical.
"""

from __future__ import annotations

from ppaux.replay.options import ReplayOptions
from ppaux.replay.results import DumpResult, PayloadResult
from ppaux.replay.vocabulary import Transport
from ppaux.report import Table
from ppaux.sglang import OUTPUT_PREFIX

__all__ = ["DETAIL_ROWS_SHOWN", "OUTPUT_NAMES_SHOWN", "detail_tables", "summary_table"]

#: Rows of one payload's detail table the text view draws (those with a problem first); the
#: other formats list every row. Presentation: drawing a table costs per row.
DETAIL_ROWS_SHOWN = 100
#: Output names the summary's cell lists before it counts the rest (the JSON results list all).
OUTPUT_NAMES_SHOWN = 20


def summary_table(results: list[DumpResult], options: ReplayOptions, device: str) -> Table:
    """One row per payload: its outcome, stage, error or output, and the wire's throughput."""
    rows: list[tuple[str, ...]] = []
    marked: set[tuple[int, int]] = set()
    wired = options.transport != Transport.NONE
    for result in results:
        for payload in result.payloads:
            run = payload.primary
            name = result.path + (payload.locator or "")
            if payload.outcome != "ok":
                marked.add((len(rows), 1))
            if payload.error is not None:
                what = f"{payload.error_type}: {payload.error}"
            elif payload.outcome == "diverged":
                what = _diverged_phrase(payload)
            elif run.output is None:
                what = "no auxiliary output"
            else:
                names = [f"{o['name'] or repr(o['name'])}" for o in run.output]
                listed = ", ".join(names[:OUTPUT_NAMES_SHOWN])
                if len(names) > OUTPUT_NAMES_SHOWN:
                    listed += f" and {len(names) - OUTPUT_NAMES_SHOWN:,} more"
                what = f"output {listed}, bit-identical"
            row: tuple[str, ...] = (name, payload.outcome, payload.stage or "-", what)
            if wired:
                rate = (run.wire_json() or {}).get("throughput_mib_s")
                row += (_rate_text(rate) if rate else "-",)
            rows.append(row)
    title = (
        f"replay: {len(results)} dump(s) on {device}, sender {_sender_text(options, results)}, "
        f"transport {options.transport.value}, impl {options.impl.value}"
    )
    columns: tuple[str, ...] = ("dump", "outcome", "stage", "error / output")
    if wired:
        columns += ("wire",)
    return Table(title, columns, tuple(rows), frozenset(marked))


def _diverged_phrase(payload: PayloadResult) -> str:
    if payload.divergences:
        fields = ", ".join(d["field"] for d in payload.divergences)
        return f"implementations disagree on {fields}"
    keys = ", ".join(
        f"{m['key'].removeprefix(OUTPUT_PREFIX)} ({m['what']})" for m in payload.primary.mismatches
    )
    return f"round trip differs: {keys}"


def detail_tables(result: DumpResult) -> list[Table]:
    """A table per payload of ``result``: each auxiliary entry sent, received and compared."""
    from ppaux.replay.roundtrip import summary

    tables = []
    for payload in result.payloads:
        run = payload.primary
        received = {entry["key"]: entry for entry in run.received or ()}
        trouble = {m["key"]: m for m in run.mismatches}
        changed: dict[str, list[str]] = {}
        for change in run.changes:
            changed.setdefault(change["key"], []).append(change["what"])
        rows: list[tuple[str, ...]] = []
        marked: set[tuple[int, int]] = set()
        for entry in run.sent or ():
            key = entry["key"]
            name = key[len(OUTPUT_PREFIX) :]
            got = received.get(key)
            if key in trouble:
                verdict = f"differs: {trouble[key]['detail']}"
                marked.add((len(rows), 3))
            elif run.mismatches or run.output is None or payload.outcome == "error":
                verdict = "-"
            else:
                verdict = "bit-identical"
                if key in changed:
                    verdict += f" ({', '.join(changed[key])} changed)"
            if run.culprit == key:
                marked.add((len(rows), 0))
            rows.append(
                (
                    repr(name) if name == "" else name,
                    summary(entry),
                    summary(got) if got is not None else "-",
                    verdict,
                )
            )
        state = payload.outcome
        if payload.error is not None:
            state += f" at {payload.stage}: {payload.error_type}: {payload.error}"
        title = f"{result.path}{payload.locator or ''} ({run.impl}): {state}"
        if len(rows) > DETAIL_ROWS_SHOWN and marked:
            # The text view draws the first rows: those a finding is about come first.
            order = sorted(range(len(rows)), key=lambda i: (i not in {r for r, _ in marked}, i))
            place = {old: new for new, old in enumerate(order)}
            rows = [rows[i] for i in order]
            marked = {(place[r], c) for r, c in marked}
        tables.append(
            Table(
                title,
                ("aux name", "sent", "received", "round trip"),
                tuple(rows),
                frozenset(marked),
                text_rows=DETAIL_ROWS_SHOWN,
            )
        )
    return tables


def _sender_text(options: ReplayOptions, results: list[DumpResult]) -> str:
    """'validating', and which dumps were sent otherwise, as they recorded it."""
    other = [r for r in results if r.sender is not None and r.sender != options.sender.value]
    if not other:
        return options.sender.value
    senders = sorted({str(r.sender) for r in other})
    return (
        f"{options.sender.value} ({', '.join(senders)} for {len(other)} capture(s) of rank 0's "
        "failing pop, as recorded)"
    )


def _rate_text(mib_s: float) -> str:
    """A throughput in the unit that suits it: '0.0149 MiB/s' reads '15.3 KiB/s'."""
    for unit, scale in (("GiB/s", 1024.0), ("MiB/s", 1.0), ("KiB/s", 1 / 1024)):
        if mib_s >= scale:
            return f"{_number(mib_s / scale)} {unit}"
    return f"{_number(mib_s * 1024 * 1024)} B/s"


def _number(value: float) -> str:
    # Three significant digits, never in exponent form (1023.9 reads 1024, not 1.02e+03).
    text = f"{value:.3g}"
    return f"{value:.0f}" if "e" in text else text
