"""CPU time of the text view of a 2,000-row table (check-observer at --steps 1000, two batch
sizes), drawing its first ``Limits.max_table_rows`` (1,000) rows, or the 200 check-observer's
table asks.

Run: ``.venv/bin/python benchmarks/bench_text_table.py``."""

from __future__ import annotations

import time

import ppaux.report.formats.text as text
from ppaux.report import Report, Table


def main() -> None:
    rows = tuple((str(b), str(s), "t", "same on both paths") for b in (1, 4) for s in range(1000))
    report = Report(command="check-observer")
    report.tables.append(Table("Obs", ("batch", "step", "sent", "verdict"), rows))
    for cap in (None, 200):  # the text view's cap alone, and check-observer's text_rows
        report.tables[0] = Table("Obs", ("batch", "step", "sent", "verdict"), rows, text_rows=cap)
        text.render(report)
        times = []
        for _ in range(3):
            start = time.process_time()
            text.render(report)
            times.append(time.process_time() - start)
        print(f"text_rows={cap}: {min(times):.3f} s CPU")


if __name__ == "__main__":
    main()
