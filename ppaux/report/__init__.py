"""Findings, reports and everything that turns them into output: the rule catalogue,
the gate (``--fail-on``, ``--select``/``--ignore``, configuration) and the formats.

Torch-free. Every other area produces :class:`Finding` objects and :class:`Report` documents;
this package owns their shape, their codes and their rendering.
"""

from ppaux._lazy import lazy_exports

_EXPORTS = {
    "Finding": "findings",
    "Severity": "findings",
    "Report": "document",
    "Table": "document",
    "InputProblem": "document",
    "FailOn": "document",
    "REPORT_SCHEMA": "document",
    "exit_code": "document",
    "Selection": "selection",
    "parse_codes": "selection",
    "Config": "config",
    "ConfigError": "config",
    "discover_config": "config",
    "load_config": "config",
    "RULES": "catalogue",
    "finding": "catalogue",
    "get_rule": "catalogue",
    "Format": "formats",
    "render": "formats",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
