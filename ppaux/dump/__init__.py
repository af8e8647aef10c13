"""Reading captured PP tensor dicts without torch and without running code from them: the
pickle interpreter and its allowlist, the value model, the file formats (zip, legacy, ppaux
captures), the payloads found in a dump, the checks that predict sglang's error, and
:func:`inspect_paths`, the job behind ``ppaux inspect``.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.dump.capture_format import make_capture, make_meta
    from ppaux.dump.checks import check_dump
    from ppaux.dump.diff import diff_paths
    from ppaux.dump.dumpfile import DUMP_SUFFIXES, Dump, collect_dumps, read_dump, read_dump_bytes
    from ppaux.dump.inspection import describe_dump, inspect_file, inspect_paths
    from ppaux.dump.model import (
        DTYPE_ITEMSIZE,
        NdArrayRef,
        Opaque,
        StorageRef,
        TensorRef,
        TorchValue,
    )
    from ppaux.dump.payload import find_payloads, key_text, safe_repr, type_name, value_phrase, walk
    from ppaux.dump.records import ZIP_READ_ERRORS, RecordReader, torch_byteorder
    from ppaux.dump.trail import culprit_text, read_culprit, read_trail, trail_text

#: Each public name and the module that holds it, imported on first use.
_EXPORTS = {
    "Dump": "dumpfile",
    "read_dump": "dumpfile",
    "read_dump_bytes": "dumpfile",
    "collect_dumps": "dumpfile",
    "DUMP_SUFFIXES": "dumpfile",
    "inspect_paths": "inspection",
    "inspect_file": "inspection",
    "describe_dump": "inspection",
    "check_dump": "checks",
    "diff_paths": "diff",
    "TensorRef": "model",
    "NdArrayRef": "model",
    "StorageRef": "model",
    "Opaque": "model",
    "TorchValue": "model",
    "DTYPE_ITEMSIZE": "model",
    "find_payloads": "payload",
    "walk": "payload",
    "key_text": "payload",
    "type_name": "payload",
    "value_phrase": "payload",
    "safe_repr": "payload",
    "make_capture": "capture_format",
    "make_meta": "capture_format",
    "read_trail": "trail",
    "read_culprit": "trail",
    "trail_text": "trail",
    "culprit_text": "trail",
    "RecordReader": "records",
    "torch_byteorder": "records",
    "ZIP_READ_ERRORS": "records",
}

__all__ = [
    "DTYPE_ITEMSIZE",
    "DUMP_SUFFIXES",
    "ZIP_READ_ERRORS",
    "Dump",
    "NdArrayRef",
    "Opaque",
    "RecordReader",
    "StorageRef",
    "TensorRef",
    "TorchValue",
    "check_dump",
    "collect_dumps",
    "culprit_text",
    "describe_dump",
    "diff_paths",
    "find_payloads",
    "inspect_file",
    "inspect_paths",
    "key_text",
    "make_capture",
    "make_meta",
    "read_culprit",
    "read_dump",
    "read_dump_bytes",
    "read_trail",
    "safe_repr",
    "torch_byteorder",
    "trail_text",
    "type_name",
    "value_phrase",
    "walk",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
