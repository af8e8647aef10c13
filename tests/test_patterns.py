"""``ppaux.patterns.lazy`` stands for ``re.compile``: the same answers for any text, compiled
only when first used; importing triage compiles almost none of its patterns."""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from ppaux.patterns import lazy

PATTERNS = [
    (r"(?P<type>[A-Za-z_]\w*Error): (?P<message>.*)", 0),
    (r"^\s*File \"(?P<file>[^\"]+)\", line (?P<line>\d+)", re.MULTILINE),
    (r"\bRank (\d{1,9})\]", re.IGNORECASE),
]


@given(st.sampled_from(PATTERNS), st.text(max_size=200))
def test_a_lazy_pattern_answers_as_the_compiled_one(source, text) -> None:
    pattern, flags = source
    compiled, late = re.compile(pattern, flags), lazy(pattern, flags)
    assert late.pattern == compiled.pattern
    found, expected = late.search(text), compiled.search(text)
    assert (found and found.groupdict()) == (expected and expected.groupdict())
    assert late.sub("<x>", text) == compiled.sub("<x>", text)
    assert [m.span() for m in late.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert late.split(text) == compiled.split(text)
    assert late.flags == compiled.flags and late.groupindex == compiled.groupindex


def test_a_pattern_is_compiled_at_its_first_use_only() -> None:
    late = lazy(r"x(")  # not a valid pattern: only its use says so
    assert late.pattern == "x("
    try:
        late.search("x")
    except re.error:
        pass
    else:  # pragma: no cover - the assertion below reports it
        raise AssertionError("an invalid pattern was used without its error")


def test_importing_triage_compiles_few_patterns() -> None:
    # Every pattern compiled while triage's modules and the CLI are imported is counted.
    code = (
        "import re\n"
        "calls = []\n"
        "original = re._compile\n"
        "re._compile = lambda p, f: calls.append(p) or original(p, f)\n"
        "import ppaux_cli.app, ppaux.triage.job, ppaux.triage.reading, ppaux.triage.incidents\n"
        "print(sum(1 for p in calls if not isinstance(p, re.Pattern)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # 337 were compiled there before triage's patterns were lazy (32 after)
    assert int(done.stdout) < 60, done.stdout
