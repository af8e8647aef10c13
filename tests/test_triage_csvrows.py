"""A table download's rows given back as their time and message, one line for one."""

from __future__ import annotations

import csv
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage.csvrows import TableRows, csv_table

_MESSAGE = st.text(
    alphabet=st.characters(exclude_categories=("Cs", "Cc"), exclude_characters="\u2028\u2029"),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(_MESSAGE, min_size=3, max_size=20),
    delimiter=st.sampled_from([",", "\t", ";"]),
    quoting=st.sampled_from([csv.QUOTE_ALL, csv.QUOTE_MINIMAL]),
    header=st.sampled_from(
        [["Time", "pod", "Line"], ["date", "host", "service", "message"], ["Time", "a", "text"]]
    ),
)
def test_each_row_gives_back_its_time_and_message_whatever_the_quoting(
    messages, delimiter, quoting, header
):
    times = [f"2026-12-03 14:56:{n:02d}.000" for n in range(len(messages))]
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, quoting=quoting, lineterminator="\n")
    writer.writerow(header)
    for time, message in zip(times, messages, strict=True):
        writer.writerow([time, *(["x-0"] * (len(header) - 2)), message])
    raw = out.getvalue().encode()
    table = csv_table(raw)
    assert table is not None
    rows = io.BufferedReader(TableRows(io.BufferedReader(io.BytesIO(raw)), table, 1 << 16))
    given_out = rows.read().decode().split("\n")
    expected = ["", *(f"{t}\t{m}" for t, m in zip(times, messages, strict=True)), ""]
    assert given_out == expected


def test_a_log_whose_first_line_is_no_header_is_no_table():
    log = (
        b"[2026-12-03 14:56:00 PP0] Decode batch, #running-req: 3, #token: 96\n" * 5
        + b"time,level,message\n"
    )
    assert csv_table(log) is None
    assert csv_table(b"name,value\n1,2\n3,4\n5,6\n") is None  # no message or time column
