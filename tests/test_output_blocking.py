"""A report written to a pipe that something made non-blocking is still written whole.

A pipe's file description is shared by every process that holds it; when one of them (a parent
tool, a library) sets it non-blocking, a plain write past the pipe's 64 KiB fails with EAGAIN as
soon as the reader lags, and a JSON report would end mid-document.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from helpers import REPO


def test_a_report_past_64_kib_reaches_a_slow_reader_of_a_non_blocking_pipe():
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    child = subprocess.Popen(
        [sys.executable, "-m", "ppaux_cli", "rules", "--format", "json"],  # about 88 KB
        cwd=REPO,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    time.sleep(3)  # the reader lags: the child has long filled the pipe
    chunks = []
    with os.fdopen(read_end, "rb") as reader:
        while chunk := reader.read(65536):
            chunks.append(chunk)
    _, stderr = child.communicate(timeout=120)
    data = b"".join(chunks)
    assert child.returncode == 0, stderr.decode()
    assert b"BlockingIOError" not in stderr
    assert len(data) > 65536
    assert json.loads(data)["rules"][0]["code"] == "PP101"
