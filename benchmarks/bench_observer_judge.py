"""Measure what records holding many differences cost check-observer's judge.

Run::

    python benchmarks/bench_observer_judge.py [--leaves N ...]

For each ``N`` (30,000 and 300,000 by default), a fresh process builds a judge, gives it a step
whose output was ``N`` plain values and a later record that changed every one (what a forged
record of under 10 MB can say), and renders the report as text and as JSON. It prints the
process's peak resident set size and CPU time (``getrusage(RUSAGE_SELF)``), the PP713 findings
in the report and the sizes of the two renderings. The judge runs in ppaux's own process: this is
that process's cost, the child's not counted. Run it from a checkout to measure that checkout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_RUN = """
import json, resource, sys
from ppaux.observer.judge import Judge
from ppaux.report.formats import Format, render
leaves = int(sys.argv[1])
judge = Judge("forged.py:Observer", "wire", "ppaux", "ppaux", (1,), 2)
judge.produced[(1, 0)] = {f".x{i}": {"type": "int", "key": "1"} for i in range(leaves)}
output = {f".x{i}": {"type": "int", "key": "2"} for i in range(leaves)}
judge.take({"event": "again", "batch_size": 1, "step": 0, "by_step": 1, "output": output})
report = judge.report()
text, document = render(report, Format.TEXT), render(report, Format.JSON)
usage = resource.getrusage(resource.RUSAGE_SELF)
found = sum(f.code == "PP713" for f in report.findings)
print(json.dumps([usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, found,
                  len(text), len(document)]))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaves", type=int, nargs="+", default=[30_000, 300_000])
    args = parser.parse_args()
    heads = ("peak RSS MB", "CPU s", "PP713", "text MB", "JSON MB")
    print(f"{'leaves':>8} " + " ".join(f"{head:>11}" for head in heads))
    for leaves in args.leaves:
        done = subprocess.run(
            [sys.executable, "-c", _RUN, str(leaves)],
            stdout=subprocess.PIPE,
            check=True,
        )
        rss, cpu, found, text, document = json.loads(done.stdout)
        print(
            f"{leaves:>8} {rss:>11.0f} {cpu:>6.2f} {found:>6} {text / 1e6:>8.2f} "
            f"{document / 1e6:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
