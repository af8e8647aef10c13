"""The ppaux capture file: a ``torch.save`` of one dict that records a failing (or sampled) call.

Layout of the saved dict (format version 1)::

    {
        "__ppaux_capture__": 1,            # CAPTURE_MARKER -> CAPTURE_VERSION
        "meta": {                          # plain str/int/float/None values only
            "ppaux_version": "0.1.0",
            "sglang_version": "0.5.23" | None,
            "torch_version": "2.13.0" | None,
            "host": "node-3", "pid": 1234,
            "rank": 3 | None, "local_rank": 3 | None, "world_size": 4 | None,
            "pp_rank": 1 | None, "pp_size": 2 | None,
            "function": "pop_auxiliary_output_from_pp_tensors",
            "exception_type": "RuntimeError" | None,
            "exception_message": "received a non-tensor auxiliary PP output" | None,
            "time": "2026-12-02T10:00:00+00:00",   # UTC, ISO 8601
            "when": "error" | "always",
        },
        "tensors": {...},                  # the tensor dict exactly as it was at the call
        "output": {...} | None,            # for add: the output's to_pp_tensors() mapping
        "trail": [...],                    # only in a capture taken by a checkpoint
        "culprit": {...},                  # only when the trail has a sender-side dirty hop
    }

A capture rewritten by ``ppaux tensorize`` (:mod:`ppaux.fix.tensorize`) keeps every field above
and its layout; ``tensors`` and ``output`` hold the converted values, every other value and
every storage location as they were. Its metadata says so with these fields (REWRITE_FIELDS)::

        "exception_type": None,            # the rewritten dict pops cleanly: nothing raised
        "exception_message": None,
        "original_exception_type": "RuntimeError" | None,      # what the captured call raised
        "original_exception_message": "received a non-tensor auxiliary PP output" | None,
        "rewritten_by": "ppaux tensorize 0.1.0",
        "rewritten_time": "2026-12-02T11:00:00+00:00",         # UTC, ISO 8601
        "rewritten_from": "/var/tmp/ppaux/capture-...-pop.pt", # absolute path of the input
        "rewritten_from_sha256": "fc30...",                    # of the input file's bytes
        "rewritten_keys": "['tensors']['__sampling_observer_output__.scores']",  # one a line

``exception_type`` and ``exception_message`` describe the call as the file now records it:
``tensorize`` writes only dicts whose every auxiliary value is a tensor, which pop (and add,
for an add-side output) accepts, so replaying the rewrite with the default, validating sender
ends without an error, as recorded. A plain dump (not a capture) stays a plain dump: it has no
place for these fields that torch.load or sglang would not take for part of the message.

``trail`` and ``culprit`` were added within format version 1: readers that do not know them
ignore them, and captures of failing add and pop calls without a checkpoint trail omit them.
A *checkpoint* capture is written on the last stage at the first hop where an output message
carries a non-tensor auxiliary value (``meta.function`` is that hop's function, such as
``_pp_send_dict_to_next_stage``; ``exception_type`` is None unless strict mode raised);
rank 0's capture of a failing pop carries the trail of the message on rank 0.

``trail`` is a list of the hops the message passed, in order::

    {"hop": "prepare",                     # add, prepare, send_dict, send, sent, recv, pop
     "at": "_pp_prepare_tensor_dict returned",
     "state": "clean" | "dirty",
     "keys": ["scores (list)"]}            # dirty auxiliary names and their types

``culprit`` names the code that ran between the last clean hop and the first dirty one::

    {"between": ["prepare", "send_dict"],  # the last clean hop (None: none seen) and the dirty one
     "function": "app.MyScheduler._pp_prepare_tensor_dict" | None,
     "file": "/srv/app/scheduler.py" | None, "line": 40 | None,      # its first line
     "code": "outside" | "modified" | "sglang" | "release" | None,
     "how": "_pp_prepare_tensor_dict of the running scheduler (function)" | None,
     "suspects": [{...}, ...],             # every function looked at, with the same fields
     "write_file": ..., "write_function": ..., "write_line": 42}     # only when traced

``code`` is ``release`` when the function's digest is the release table's, ``modified`` when the
table knows the function and the digest differs, ``sglang`` for other code of sglang's package,
``outside`` for code from anywhere else. ``write_*`` appear on the capture of a message traced
after a first dirty one: the line that wrote the value.

The reader (:mod:`ppaux.dump.dumpfile`) recognises the marker and checks ``tensors`` as the payload;
it reads this structure without torch. Writing one needs torch (``torch.save``).
"""

from __future__ import annotations

import datetime
import os
import socket
from typing import Any

__all__ = [
    "CAPTURE_MARKER",
    "CAPTURE_VERSION",
    "META_FIELDS",
    "REWRITE_FIELDS",
    "make_capture",
    "make_meta",
]

CAPTURE_MARKER = "__ppaux_capture__"
CAPTURE_VERSION = 1

#: Every key of the metadata record, in order.
META_FIELDS = (
    "ppaux_version",
    "sglang_version",
    "torch_version",
    "host",
    "pid",
    "rank",
    "local_rank",
    "world_size",
    "pp_rank",
    "pp_size",
    "function",
    "exception_type",
    "exception_message",
    "time",
    "when",
)

#: The fields ``ppaux tensorize`` adds to the metadata of a capture it rewrites, in order.
REWRITE_FIELDS = (
    "original_exception_type",
    "original_exception_message",
    "rewritten_by",
    "rewritten_time",
    "rewritten_from",
    "rewritten_from_sha256",
    "rewritten_keys",
)


def _env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def make_meta(
    function: str,
    exception: BaseException | None = None,
    *,
    when: str = "error",
    sglang_version: str | None = None,
    torch_version: str | None = None,
    pp_rank: int | None = None,
    pp_size: int | None = None,
) -> dict[str, Any]:
    """The metadata record for a capture taken now, in this process."""
    from ppaux._version import __version__

    return {
        "ppaux_version": __version__,
        "sglang_version": sglang_version,
        "torch_version": torch_version,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "rank": _env_int("RANK"),
        "local_rank": _env_int("LOCAL_RANK"),
        "world_size": _env_int("WORLD_SIZE"),
        "pp_rank": pp_rank,
        "pp_size": pp_size,
        "function": function,
        "exception_type": type(exception).__name__ if exception is not None else None,
        "exception_message": str(exception) if exception is not None else None,
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "when": when,
    }


def make_capture(
    meta: dict[str, Any],
    tensors: object,
    output: object = None,
    *,
    trail: list[dict[str, Any]] | None = None,
    culprit: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The dict to ``torch.save``: marker, metadata, the tensor dict and the add-side output;
    ``trail`` and ``culprit`` only when a checkpoint took the capture (see the module's text)."""
    record = {
        CAPTURE_MARKER: CAPTURE_VERSION,
        "meta": dict(meta),
        "tensors": tensors,
        "output": output,
    }
    if trail is not None:
        record["trail"] = trail
    if culprit is not None:
        record["culprit"] = culprit
    return record
