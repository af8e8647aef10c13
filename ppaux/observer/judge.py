"""The verdict: the records a check's child sent, judged into a report (findings PP701 - PP718).

Pure functions of plain data: :class:`Judge` takes the records one at a time (:meth:`take`),
the way the child ended (:meth:`ended`), and makes the report (:meth:`report`); the findings
are worded in :mod:`.findings`. It imports no torch and none of the target's code, so
nothing the target does can change how its records are judged. :mod:`.runner` says what each
record holds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ppaux.limits import Limits
from ppaux.observer.compare import Difference, differences, uncompared
from ppaux.observer.findings import (
    END_CODES,
    Ending,
    changed_finding,
    difference_finding,
    difference_pattern,
    end_finding,
    fault_finding,
    fault_key,
    left_running,
    nothing_sent_finding,
    sending_changes,
    threads_finding,
    uncompared_finding,
)
from ppaux.observer.locating import Places
from ppaux.observer.paths import Fault
from ppaux.observer.phrasing import (
    about_requests,
    cut,
    difference_entry,
    fault_of,
    first_sentence,
    overlaps,
    step_entry,
    verdict_cell,
    where,
)
from ppaux.observer.walk import shown_name
from ppaux.report import Finding, FindingsBudget, Location, Report, ReportBuilder, Table, finding
from ppaux.suggestions import RaiseLimit

__all__ = ["Ending", "Judge"]

#: The most values not compared that the report lists (each is listed once).
_SHOWN_UNCOMPARED = 20
#: Rows of the step table the text view draws (one per batch size and step: 2,000 at
#: --steps 1000, a second of drawing); the findings name every failing step, the JSON report
#: lists every row.
_TEXT_ROWS = 200
#: The names a record may give as the limit that stopped it.
_LIMITS = frozenset(f.name for f in dataclasses.fields(Limits))


@dataclass
class Judge:
    """The verdict on one check, built from its records (see the module's docstring)."""

    target: str
    transport: str
    impl: str
    sender: str
    batch_sizes: tuple[int, ...]
    steps: int
    findings: list[Finding] = field(default_factory=list)
    rows: list[tuple[str, ...]] = field(default_factory=list)
    marked: set[tuple[int, int]] = field(default_factory=set)
    results: list[dict[str, Any]] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    start: dict[str, Any] = field(default_factory=dict)
    #: Where findings point (:mod:`.locating`).
    places: Places = field(default_factory=Places)
    produced: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    row_of: dict[tuple[int, int], int] = field(default_factory=dict)
    endings: list[Ending] = field(default_factory=list)
    #: Per batch size and request number, the paths of the request differences reported.
    request_paths: dict[tuple[int, int], set[str]] = field(default_factory=dict)
    outputs: int = 0
    #: What was not compared ('the output .table' -> why), the first :data:`_SHOWN_UNCOMPARED`.
    not_compared: dict[str, str] = field(default_factory=dict)
    #: How many values were not compared in all (listed or not).
    uncompared_count: int = 0
    #: The limits (of :class:`~ppaux.limits.Limits`) that left a value not compared.
    limits_reached: list[str] = field(default_factory=list)
    #: The limits the run had: a limit reached is suggested with its value in the run.
    limits: Limits = field(default_factory=Limits)
    #: Per code, the findings built, and those past ``max_findings_per_code`` only counted.
    budget: FindingsBudget = field(init=False)
    #: What the last record that described requests was ('step' or 'requests'): the
    #: ``reqs`` records after it carry its further requests.
    described: str = ""

    def __post_init__(self) -> None:
        self.budget = FindingsBudget(self.limits)

    # ------------------------------------------------------------------------------------------
    # Records

    def take(self, message: dict[str, Any]) -> None:
        """Judge one record."""
        event = message.get("event")
        handler = getattr(self, f"_on_{event}", None)
        if handler is not None:
            handler(message)

    def _on_start(self, m: dict[str, Any]) -> None:
        self.start = m

    def _on_made(self, m: dict[str, Any]) -> None:
        method, names = m.get("method"), m.get("names")
        if isinstance(method, str) and isinstance(names, dict):
            self.places.made[method] = m

    def _on_wire(self, m: dict[str, Any]) -> None:
        records = m.get("records")
        if isinstance(records, dict) and self.produced:
            self.places.wire = records
            self.places.wire_output = self.produced[list(self.produced)[-1]]

    def _on_locations(self, m: dict[str, Any]) -> None:
        subjects = m.get("subjects")
        self.places.locations = subjects if isinstance(subjects, dict) else {}

    def _on_rank0_failed(self, m: dict[str, Any]) -> None:
        self.findings.append(
            finding(
                "PP710/init-failed",
                self.target,
                f"making rank 0's observer failed: {cut(m.get('reason'))}",
                extra={"method": "__init__", "side": "rank 0"},
            )
        )

    def _on_driving(self, m: dict[str, Any]) -> None:
        batch_size, index, method = m["batch_size"], m["step"], cut(m.get("method"))
        text = cut(m.get("text", ""))
        side = "the last stage (or the single GPU)"
        if self._once("PP710", method):
            self.findings.append(
                finding(
                    "PP710/raised",
                    self.target,
                    f"{method} raised {first_sentence(text)} on {side} "
                    f"({where(batch_size, index)})",
                    extra={"method": method, "side": side},
                    location=Location.of(m.get("location")),
                )
            )
        self._row(batch_size, index, "-", f"{method} raised {text}", "error")
        result = step_entry(batch_size, index, [])
        result["driving"] = m.get("fault")
        self.results.append(result)

    def _on_no_output(self, m: dict[str, Any]) -> None:
        self._row(m["batch_size"], m["step"], "-", f"no output ({m.get('why')})", "-")

    def _on_undescribable(self, m: dict[str, Any]) -> None:
        batch_size, index = m["batch_size"], m["step"]
        location = m.get("location")
        method = (location or {}).get("function", "?")
        text = (
            f"{cut(m.get('what'))} could not be read: {cut(method)} raised "
            f"{cut(m.get('error_type'))}{': ' + cut(m.get('message')) if m.get('message') else ''} "
            f"({where(batch_size, index)}); sglang reads its outputs and requests the same way"
        )
        if self._once("PP710", f"describe/{m.get('what')}"):
            self.findings.append(
                finding(
                    "PP710/described",
                    self.target,
                    text,
                    extra={"method": method, "side": "described"},
                    location=Location.of(location),
                )
            )
        self._row(
            batch_size,
            index,
            "-",
            f"unreadable: {cut(method)} raised {cut(m.get('error_type'))}",
            "error",
        )

    def _on_step(self, m: dict[str, Any]) -> None:
        self._step(m)
        # PP717: what to_pp_tensors changed in the output it sent (the last stage keeps it).
        changed = sending_changes(self.target, m, where(m["batch_size"], m["step"]))
        for item in changed:
            if self._once("PP717", str(item.key)):
                self.findings.append(item)
        if changed:
            self._changed_row(m["batch_size"], m["step"], "changed by to_pp_tensors (PP717)")

    def _step(self, m: dict[str, Any]) -> None:
        batch_size, index = m["batch_size"], m["step"]
        self.outputs += 1
        sent = [shown_name(str(s)) for s in m.get("sent", [])]
        names = ", ".join(sent)
        result = step_entry(batch_size, index, sent)
        result["single_stage"] = m.get("single")
        result["pp"] = m.get("pp")
        self.results.append(result)
        self.produced[(batch_size, index)] = m.get("output") or {}
        single = fault_of(m.get("single"))
        pp = fault_of(m.get("pp"))
        if single is not None:
            self._fault_finding(single, batch_size, index)
        if pp is not None:
            self._fault_finding(pp, batch_size, index)
            self._row(batch_size, index, names or "-", verdict_cell(pp), "error")
            return
        if single is not None:
            self._row(batch_size, index, "-", f"single stage: {verdict_cell(single)}", "error")
            return
        self.described = "step"
        self._uncompared("the output", m.get("output"), m.get("rebuilt"))
        rebuilt = differences(m.get("output") or {}, m.get("rebuilt") or {})
        kinds = (str(m.get("output_type")), str(m.get("rebuilt_type")))
        if kinds[0] != kinds[1]:  # by name: a file loaded twice gives two classes of one name
            rebuilt.insert(0, Difference("", "type", *kinds))
        for item in rebuilt:
            result["differences"].append(difference_entry("output", item))
            self._difference_finding("PP711", "the output rank 0 rebuilt", item, batch_size, index)
        self._step_requests(m, 0)
        found = len(result["differences"])
        verdict = "same on both paths" if not found else f"{found} difference(s)"
        self._row(batch_size, index, names or "-", verdict, "ok" if not found else "differs")

    def _uncompared(self, subject: str, *sides: object) -> None:
        for found in sides:
            if not isinstance(found, dict):
                continue
            for path, why in uncompared(found).items():
                self.uncompared_count += 1
                if len(self.not_compared) < _SHOWN_UNCOMPARED:
                    self.not_compared.setdefault(f"{path} of {subject}", why)
                limit = found[path].get("limit")
                if limit in _LIMITS and limit not in self.limits_reached:
                    self.limits_reached.append(limit)

    def _request_difference(
        self, result: dict[str, Any], number: int, item: Difference, batch_size: int, index: int
    ) -> None:
        self.request_paths.setdefault((batch_size, number), set()).add(item.path)
        result["differences"].append(difference_entry(f"request {number}", item))
        self._difference_finding(
            "PP712", f"request {number} after consume", item, batch_size, index
        )

    def _on_requests(self, m: dict[str, Any]) -> None:
        """The requests described whole at the end of a batch size: a difference no step's
        records showed (an item changed in place; see :mod:`.growth`) is the last step's."""
        self.described = "requests"
        self._whole_requests(m, 0)

    def _on_reqs(self, m: dict[str, Any]) -> None:
        """The next requests of the last step's record, or of its ``requests`` record."""
        if self.described == "step":
            self._step_requests(m, m["first"])
        else:
            self._whole_requests(m, m["first"])

    def _step_requests(self, m: dict[str, Any], first: int) -> None:
        """The requests of a step's records (``first`` is the number of the first): their
        differences are the step's."""
        batch_size, index = m["batch_size"], m["step"]
        result = self._result(batch_size, index)
        if result is None:
            return
        pairs = list(zip(m.get("single_reqs") or [], m.get("pp_reqs") or [], strict=False))
        for number, pair in enumerate(pairs, first):
            self._uncompared(f"request {number}", *pair)
        found = 0
        for number, (a, b) in enumerate(pairs, first):
            for item in differences(a, b):
                found += 1
                self._request_difference(result, number, item, batch_size, index)
        if found and first:
            self._counted_row(batch_size, index, result)

    def _whole_requests(self, m: dict[str, Any], first: int) -> None:
        batch_size, index = m["batch_size"], m["step"]
        result = self._result(batch_size, index)
        if result is None:
            return
        pairs = zip(m.get("single_reqs") or [], m.get("pp_reqs") or [], strict=False)
        new = 0
        for number, (a, b) in enumerate(pairs, first):
            shown = self.request_paths.get((batch_size, number), set())
            for item in differences(a, b):
                if not any(overlaps(item.path, path) for path in shown):
                    new += 1
                    self._request_difference(result, number, item, batch_size, index)
        if new:
            self._counted_row(batch_size, index, result)

    def _result(self, batch_size: int, index: int) -> dict[str, Any] | None:
        """The results' entry of step ``index`` of ``batch_size`` (the latest), or None."""
        return next(
            (
                r
                for r in reversed(self.results)
                if (r["batch_size"], r["step"]) == (batch_size, index)
            ),
            None,
        )

    def _counted_row(self, batch_size: int, index: int, result: dict[str, Any]) -> None:
        """The row of a step says how many differences its results hold now, marked."""
        row = self.row_of.get((batch_size, index))
        if row is not None:
            batch, step, sent, _ = self.rows[row]
            self.rows[row] = (batch, step, sent, f"{len(result['differences'])} difference(s)")
            self.marked.add((row, 3))

    def _on_again(self, m: dict[str, Any]) -> None:
        batch_size, index = m["batch_size"], m["step"]
        then = self.produced.pop((batch_size, index), None)
        if then is None:
            return
        # A leaf the output gained since (a cached_property its own to_pp_tensors filled) is
        # the object growing, not memory a later step overwrote: only the leaves it had when
        # produced are compared.
        changed = [d for d in differences(then, m.get("output") or {}) if d.what != "extra"]
        if changed:
            self._changed_row(batch_size, index, f"changed by step {m.get('by_step')} (PP713)")
        for item in changed:
            if not self._once("PP713", item.path):
                continue
            self.findings.append(
                changed_finding(self.target, item, batch_size, index, m.get("by_step"))
            )

    def _on_end(self, m: dict[str, Any]) -> None:
        threads = [str(name) for name in m.get("threads") or []]
        if threads:
            self.findings.append(threads_finding(self.target, left_running(threads)))

    def ended(self, ending: Ending) -> None:
        """The child ended in a way that is the target's doing: a finding (PP715); processes
        it left running (``outlived``) are PP718, a warning, as the threads it left are."""
        if END_CODES.get(ending.kind) != "PP718":  # what it left running is no way it ended
            self.endings.append(ending)
        self.findings.append(end_finding(self.target, ending))

    # ------------------------------------------------------------------------------------------
    # Findings

    def _once(self, code: str, what: str) -> bool:
        key = (code, what)
        self.counts[key] = self.counts.get(key, 0) + 1
        if key in self.seen:
            return False
        self.seen.add(key)
        # Past the limit a finding is counted, not built: the report says how many
        # (``FindingsBudget``), whatever number of differences the records hold.
        return self.budget.take(code)

    def _fault_finding(self, fault: Fault, batch_size: int, index: int) -> None:
        item = fault_finding(self.target, self.transport, fault, where(batch_size, index))
        if self._once(item.code, fault_key(fault)):
            self.findings.append(item)

    def _difference_finding(
        self, code: str, subject: str, item: Difference, batch_size: int, index: int
    ) -> None:
        # One finding per field and kind of difference, whichever request, step or list index:
        # the first one is shown, the others are counted in the report's data.
        if self._once(code, difference_pattern(item)):
            at = where(batch_size, index)
            self.findings.append(difference_finding(code, self.target, subject, item, at))

    def _row(self, batch_size: int, index: int, sent: str, verdict: str, state: str) -> None:
        if state in ("error", "differs"):
            self.marked.add((len(self.rows), 3))
        self.row_of[(batch_size, index)] = len(self.rows)
        self.rows.append((str(batch_size), str(index), sent, verdict))

    def _changed_row(self, batch_size: int, index: int, verdict: str) -> None:
        """The row of a step whose output was changed (by a later step, PP713; by its own
        to_pp_tensors, PP717) says so, marked."""
        row = self.row_of.get((batch_size, index))
        if row is None:
            return
        batch, step, sent, _ = self.rows[row]
        self.rows[row] = (batch, step, sent, verdict)
        self.marked.add((row, 3))

    # ------------------------------------------------------------------------------------------
    # The report

    def report(self, output: str = "") -> Report:
        """The report of everything taken; ``output`` is what the target printed (notes)."""
        return self.draft(output).build()

    def draft(self, output: str = "") -> ReportBuilder:
        """:meth:`report` before it is built, for the caller to add to."""
        report = ReportBuilder(command="check-observer")
        unsent = self.start and not self.endings and self.outputs == 0
        if unsent and not any(f.code == "PP710" for f in self.findings):
            report.findings.append(nothing_sent_finding(self.target))
        report.findings += [self.places.located(item) for item in self.findings]
        report.findings += self._counted(report.findings)
        report.findings = FindingsBudget(self.limits).cap(report.findings, "in this check")
        report.data["observer"] = self._observer_data()
        if self.not_compared:
            # Every format lists them: a difference in them is not reported.
            report.data["observer"]["not_compared"] = [
                {"where": place, "why": why} for place, why in self.not_compared.items()
            ]
            report.data["observer"]["not_compared_count"] = self.uncompared_count
            report.findings.append(
                uncompared_finding(
                    self.target,
                    self.not_compared,
                    self.uncompared_count,
                    [RaiseLimit(n, getattr(self.limits, n)) for n in self.limits_reached],
                )
            )
        if self.limits_reached:
            # Which limits to raise for those values to be compared (``--limit NAME=N``).
            report.data["observer"]["limits_reached"] = list(self.limits_reached)
        report.data["steps"] = self.results
        if output:
            report.notes.append(f"the target printed:\n{output}")
        for place, why in self.not_compared.items():
            report.notes.append(f"{place}: {why} (a difference in it is not reported)")
        if self.start and any(about_requests(item) for item in report.findings):
            # Which requests consume saw bears on these findings; other reports stay quiet.
            report.notes.append(
                f"consume saw {report.data['observer']['requests']} as its requests and batch"
            )
        report.tables.append(self._step_table())
        return report

    def _counted(self, listed: list[Finding]) -> list[Finding]:
        """Per code with findings only counted, one that stands for them (``extra.omitted``),
        as its first listed finding says it."""
        first: dict[str, Finding] = {}
        for item in listed:
            first.setdefault(item.code, item)
        return [
            dataclasses.replace(first[code], extra={"omitted": count})
            for code, count in self.budget.omitted.items()
            if code in first
        ]

    def _observer_data(self) -> dict[str, Any]:
        """The JSON report's ``observer``: what was checked, how, and how it ended."""
        given = bool(self.start.get("given"))
        sglang_parts = bool(self.start.get("sglang_parts"))
        return {
            "target": self.target,
            "kind": self.start.get("kind"),
            "origin": self.start.get("origin"),
            "transport": self.transport,
            "impl": self.impl,
            "sender": self.sender,
            "device": str(self.start.get("device", "?")),
            "batch_sizes": list(self.batch_sizes) if not given else [self.batch_sizes[0]],
            "steps": self.steps if not given else None,
            "outputs_given": given,
            "sampling_info": "sglang" if sglang_parts else "stand-in",
            "result_processing": "sglang" if sglang_parts else "ppaux",
            "requests": str(self.start.get("requests") or "ppaux stand-ins"),
            "repeats": {f"{code} {what}": n for (code, what), n in self.counts.items() if n > 1},
            "ended": [{"kind": e.kind, "text": e.text} for e in self.endings],
        }

    def _step_table(self) -> Table:
        """The step table: a row per batch size and step, the failing ones marked."""
        name = self.target.rpartition(":")[2] or self.target
        device = str(self.start.get("device", "?"))
        title = (
            f"{name}: transport {self.transport}, impl {self.impl}, sender {self.sender}, {device}"
        )
        return Table(
            title,
            ("batch", "step", "sent", "verdict"),
            tuple(self.rows),
            frozenset(self.marked),
            text_rows=_TEXT_ROWS,
        )
