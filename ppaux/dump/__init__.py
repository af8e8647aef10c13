"""Reading captured PP tensor dicts without torch and without running code from them: the
pickle interpreter and its allowlist, the value model, the file formats (zip, legacy, ppaux
captures), the payloads found in a dump, the checks that predict sglang's error, and
:func:`inspect_paths`, the job behind ``ppaux inspect``.
"""

from ppaux._lazy import lazy_exports

_EXPORTS = {
    "Dump": "dumpfile",
    "read_dump": "dumpfile",
    "read_dump_bytes": "dumpfile",
    "inspect_paths": "inspection",
    "inspect_file": "inspection",
    "describe_dump": "inspection",
    "collect_dumps": "dumpfile",
    "DUMP_SUFFIXES": "dumpfile",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
