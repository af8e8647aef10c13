"""A target given by name whose import hangs is bounded by the check's timeout wherever it is
imported: in hand with its outputs given (the checking process imports it), the check ends
within the timeout with PP715 ``timeout`` saying it hangs at import, and no step runs."""

from __future__ import annotations

import time

import pytest
import torch  # noqa: F401  (the check runs torch)

from ppaux.testing import pp_safety_report

pytestmark = pytest.mark.torch


def test_an_import_that_hangs_in_hand_is_a_timeout_at_import(tmp_path, monkeypatch):
    ran = tmp_path / "ran"
    (tmp_path / "hangs_at_import.py").write_text(
        "import time\ntime.sleep(30)\n"
        "class EntropyObserver:\n"
        "    def from_pp_tensors(self, tensors):\n"
        f"        open({str(ran)!r}, 'w').close()\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    began = time.monotonic()
    report = pp_safety_report(
        "hangs_at_import:EntropyObserver", outputs=lambda: [], steps=1, timeout_s=1.0
    )
    took = time.monotonic() - began
    assert took < 10, took
    found = [(f.code, f.extra.get("end")) for f in report.findings]
    assert found == [("PP715", "timeout")], report.findings
    message = report.findings[0].message
    assert message.startswith("importing the target (its module's code, run in the checking")
    assert "within the check's timeout (1 s): it hangs at import" in message
    assert report.notes == ()
    assert not ran.exists()
