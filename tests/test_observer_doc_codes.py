"""The rule codes the docs name for the check of an observer are the catalogue's: every code
named is a rule ``ppaux rules`` lists, and each "PP7xx `kind`" (a way the run ended) names the
code the judge gives that kind."""

from __future__ import annotations

import re

import pytest
from helpers import REPO

from ppaux.limits import Limits
from ppaux.observer.findings import END_CODES, Ending
from ppaux.observer.judge import Judge
from ppaux.report.catalogue import RULES

DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
OBSERVERS = REPO / "docs" / "observers.md"


def test_every_code_docs_observers_names_is_in_the_catalogue():
    named = set(re.findall(r"\bPP\d{3}\b", OBSERVERS.read_text(encoding="utf-8")))
    assert named, "no code found"
    assert sorted(named - set(RULES)) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_each_end_kind_the_docs_name_has_the_code_the_judge_gives_it(doc):
    text = " ".join(doc.read_text(encoding="utf-8").split())
    for code, kind in re.findall(r"\b(PP7\d\d) `([a-z_]+)`", text):
        if kind in END_CODES:
            assert END_CODES[kind] == code, f"{doc.name}: {code} `{kind}`"


#: What the target left running is a warning (PP718); every other way the run ended is PP715.
LEFT = {"threads", "outlived"}


@pytest.mark.parametrize("kind", sorted(END_CODES))
def test_the_judge_gives_each_end_kind_its_code(kind):
    judge = Judge(
        target="t.py:Observer",
        transport="wire",
        impl="ppaux",
        sender="ppaux",
        batch_sizes=(1,),
        steps=2,
        limits=Limits(),
    )
    judge.ended(Ending(kind, "text"))
    (found,) = judge.findings
    assert (found.code, found.extra["end"]) == ("PP718" if kind in LEFT else "PP715", kind)
    assert END_CODES[kind] == found.code
