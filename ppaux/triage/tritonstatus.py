"""Triton Inference Server's model status table, as it prints it when a model does not load: a
row whose status cell says ``UNAVAILABLE:`` and why (``| tensorrt_llm | 1 | UNAVAILABLE:
Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] Assertion
failed: |``), the words going on in the same cell of the rows below, whose model and version
cells are empty (``| | | mpiSize == tp * pp (/app/.../worldConfig.cpp:80) |``), until the
backend's backtrace (``| | | 1 0x7f92... /opt/tritonserver/backends/...``). The model's failure
to load is the failure; its words are the backend's error.
"""

from __future__ import annotations

from ppaux.patterns import lazy

__all__ = ["TRITON_MARKERS", "TRITON_TYPE", "triton_more", "triton_status"]

#: What makes a line worth reading for this module: a status row, and a row that goes on with
#: the cell above (its model and version cells empty: the version column is as wide as its
#: heading, ``Version``).
TRITON_MARKERS: tuple[bytes, ...] = (b"| UNAVAILABLE: ", b"|         | ")
#: What such a record is called: Triton's own words, no Python type.
TRITON_TYPE = "Triton model UNAVAILABLE"
_ROW = lazy(
    r"^\s{0,8}\|\s?(?P<model>[\w.-]{1,200})\s{0,200}\|\s?(?P<version>\d{1,9})\s{0,40}\|\s?"
    r"UNAVAILABLE: (?P<said>.{1,2000}?)\s*\|?\s*$"
)
_MORE = lazy(r"^\s{0,8}\|\s{1,200}\|\s{9}\|\s?(?P<said>\S.{0,2000}?)\s*\|?\s*$")
#: A frame of the backend's backtrace in the cell (``1       0x7f923a86a645 /opt/...``).
_FRAME = lazy(r"^\d{1,4}\s+0x[0-9a-fA-F]{1,16}\b")


def triton_status(text: str) -> tuple[str, str] | None:
    """(type, message) of a status row of Triton's table whose model is UNAVAILABLE, as triage
    reads it, or None for another line."""
    found = _ROW.match(text)
    if found is None:
        return None
    return TRITON_TYPE, (
        f"model {found['model']} (version {found['version']}) is UNAVAILABLE: {found['said']}"
    )


def triton_more(text: str) -> str | None:
    """The words a row of Triton's table goes on with in the status cell above (its model and
    version cells empty), or None for another line or a frame of the backend's backtrace."""
    found = _MORE.match(text)
    if found is None or _FRAME.match(found["said"]) is not None:
        return None
    return found["said"]
