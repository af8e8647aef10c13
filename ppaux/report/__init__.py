"""Findings, reports and everything that turns them into output: the rule catalogue,
the gate (``--fail-on``, ``--select``/``--ignore``, configuration) and the formats.

Torch-free. Every other area produces :class:`Finding` objects and :class:`Report` documents;
this package owns their shape, their codes and their rendering.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.report.catalogue import RULES, UnknownRuleError, finding, get_rule
    from ppaux.report.config import Config, ConfigError, discover_config, load_config, resolve_gate
    from ppaux.report.document import REPORT_SCHEMA, FailOn, InputProblem, Report, Table, exit_code
    from ppaux.report.error_pages import ERROR_PAGES, ErrorPage, page_for
    from ppaux.report.findings import Finding, Rule, Severity, cap_per_code
    from ppaux.report.formats import Format, render
    from ppaux.report.formats.error_page import (
        error_page_json,
        error_page_markdown,
        error_page_text,
    )
    from ppaux.report.formats.github import step_summary
    from ppaux.report.formats.rule_text import render_rule
    from ppaux.report.formats.rules import (
        RulesFormat,
        markdown_code,
        markdown_text,
        render_rules,
        rule_json,
        rule_markdown,
    )
    from ppaux.report.formats.statistics import statistics_json, statistics_text
    from ppaux.report.gate import Gate
    from ppaux.report.paths import find_root, rebase_report
    from ppaux.report.selection import Selection, UnknownCodeError, parse_codes

#: Each public name and the module that holds it, imported on first use.
_EXPORTS = {
    "Finding": "findings",
    "Rule": "findings",
    "Severity": "findings",
    "cap_per_code": "findings",
    "Report": "document",
    "Table": "document",
    "InputProblem": "document",
    "FailOn": "document",
    "REPORT_SCHEMA": "document",
    "exit_code": "document",
    "Selection": "selection",
    "UnknownCodeError": "selection",
    "parse_codes": "selection",
    "Config": "config",
    "ConfigError": "config",
    "discover_config": "config",
    "load_config": "config",
    "resolve_gate": "config",
    "Gate": "gate",
    "find_root": "paths",
    "rebase_report": "paths",
    "RULES": "catalogue",
    "UnknownRuleError": "catalogue",
    "finding": "catalogue",
    "get_rule": "catalogue",
    "Format": "formats",
    "render": "formats",
    "RulesFormat": "formats.rules",
    "render_rules": "formats.rules",
    "rule_json": "formats.rules",
    "rule_markdown": "formats.rules",
    "markdown_text": "formats.rules",
    "markdown_code": "formats.rules",
    "render_rule": "formats.rule_text",
    "statistics_text": "formats.statistics",
    "statistics_json": "formats.statistics",
    "step_summary": "formats.github",
    "ERROR_PAGES": "error_pages",
    "ErrorPage": "error_pages",
    "page_for": "error_pages",
    "error_page_json": "formats.error_page",
    "error_page_markdown": "formats.error_page",
    "error_page_text": "formats.error_page",
}

__all__ = [
    "ERROR_PAGES",
    "REPORT_SCHEMA",
    "RULES",
    "Config",
    "ConfigError",
    "ErrorPage",
    "FailOn",
    "Finding",
    "Format",
    "Gate",
    "InputProblem",
    "Report",
    "Rule",
    "RulesFormat",
    "Selection",
    "Severity",
    "Table",
    "UnknownCodeError",
    "UnknownRuleError",
    "cap_per_code",
    "discover_config",
    "error_page_json",
    "error_page_markdown",
    "error_page_text",
    "exit_code",
    "find_root",
    "finding",
    "get_rule",
    "load_config",
    "markdown_code",
    "markdown_text",
    "page_for",
    "parse_codes",
    "rebase_report",
    "render",
    "render_rule",
    "render_rules",
    "resolve_gate",
    "rule_json",
    "rule_markdown",
    "statistics_json",
    "statistics_text",
    "step_summary",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
