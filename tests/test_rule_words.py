"""The rule text a person reads (summary, causes, fix) speaks of what the report shows, never
of the JSON report's field names."""

from __future__ import annotations

from ppaux.report.catalogue import RULES


def test_no_rule_text_a_person_reads_names_a_json_field():
    assert "PP802" in RULES
    for rule in RULES.values():
        for text in (rule.summary, rule.fix, *rule.causes, *(f for _, f in rule.kind_fixes)):
            assert "extra." not in text, (rule.code, text)
            assert "extra[" not in text, (rule.code, text)
