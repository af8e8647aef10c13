"""``ppaux.testing.assert_pp_safe`` and the pytest plugin's ``pp_safe`` fixture, as an
integration's test suite uses them."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
from helpers import REPO

from ppaux.observer.target import load_object
from ppaux.testing import (
    LeftRunningWarning,
    NothingCheckedWarning,
    assert_pp_safe,
    pp_safety_report,
)

pytestmark = pytest.mark.torch

OBSERVERS = REPO / "fixtures" / "observers"


def fixture(name: str):
    return load_object(f"{OBSERVERS / name}")


def test_a_pp_safe_observer_passes_as_class_instance_factory_and_target():
    good = fixture("entropy_good.py:EntropyObserver")
    assert assert_pp_safe(good).findings == ()
    assert assert_pp_safe(good()).findings == ()
    assert assert_pp_safe(lambda: good()).findings == ()
    assert assert_pp_safe(f"{OBSERVERS / 'entropy_good.py'}:EntropyObserver").findings == ()


def test_a_leaking_observer_fails_with_every_finding_and_sglangs_message():
    leaking = fixture("entropy_list.py:EntropyObserver")
    with pytest.raises(AssertionError) as caught:
        assert_pp_safe(leaking)
    text = str(caught.value)
    lines = text.splitlines()
    assert lines[0] == (
        "sampling observer EntropyObserver is not PP-safe: 1 finding (transport wire, impl "
        "reference, sender validating)"
    )
    assert lines[1].startswith(
        "  PP705 error [entropy]: the last stage's add raises RuntimeError: auxiliary PP output "
        "'entropy' is not a tensor"
    )
    # The line that produced the list (the return), as check-observer's text report shows it.
    source = (OBSERVERS / "entropy_list.py").read_text(encoding="utf-8").splitlines()
    line = 1 + next(
        i for i, x in enumerate(source) if 'return {"entropy": self.entropy.tolist' in x
    )
    shown = os.path.relpath(OBSERVERS / "entropy_list.py")
    assert lines[2] == f"      at: {shown}:{line} in EntropyOutput.to_pp_tensors"
    assert (
        lines[3]
        == "      sglang raises: RuntimeError: auxiliary PP output 'entropy' is not a tensor"
    )
    assert lines[4].startswith("      fix: Return tensors only")


def test_the_assertion_shows_an_observer_key_escaped():
    # The assertion's text is where its findings are rendered: a key holding an escape
    # sequence or a bidi override is shown escaped there, on its own line.
    leaking = fixture("entropy_list.py:EntropyObserver")
    output = fixture("entropy_list.py:EntropyOutput")

    class Hostile(output):
        def to_pp_tensors(self) -> dict:
            return {"entropy\x1b[2J\u202e": self.entropy.tolist()}

    class Observer(leaking):
        def after_sample(self, state, token_ids):
            return Hostile(state)

    with pytest.raises(AssertionError) as caught:
        assert_pp_safe(Observer)
    text = str(caught.value)
    assert "PP705 error [entropy\\x1b[2J\\u202e]: " in text, text
    assert not any(c in text for c in "\x1b\u202e"), text


def test_the_assertion_names_the_line_the_cli_names():
    from helpers import cli

    target = f"{OBSERVERS / 'entropy_list.py'}:EntropyObserver"
    with pytest.raises(AssertionError) as caught:
        assert_pp_safe(target)
    shown = cli("check-observer", target)
    [at] = [x.strip() for x in shown.stdout.splitlines() if x.strip().startswith("at: ")]
    assert at.endswith(" in EntropyOutput.to_pp_tensors")
    assert f"      {at}" in str(caught.value).splitlines()


def test_ignore_and_fail_on():
    leaking = fixture("entropy_list.py:EntropyObserver")
    report = assert_pp_safe(leaking, ignore=["pp705"])
    assert [f.code for f in report.findings] == ["PP705"]
    never = fixture("faulty.py:NeverActiveObserver")
    # A warning does not fail by default, but a test that checked nothing says so.
    with pytest.warns(
        NothingCheckedWarning, match=r"produced no auxiliary output.*\(PP714\)"
    ) as warned:
        assert_pp_safe(never)
    # The warning names the test's own line, not ppaux's.
    assert {w.filename for w in warned if w.category is NothingCheckedWarning} == {__file__}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert_pp_safe(never, ignore=["PP714"])  # ignored: no warning either
        assert_pp_safe(fixture("entropy_good.py:EntropyObserver"))  # checked: no warning
    assert [w for w in seen if issubclass(w.category, NothingCheckedWarning)] == []
    with pytest.raises(AssertionError, match="PP714") as caught:
        assert_pp_safe(never, fail_on="warning")
    # The fix is said in the library's words (a keyword), not the command line's flag.
    assert (
        "fix: Make the observer active for the stand-in sampling_info, or send outputs of your "
        "own; give outputs a zero-argument callable returning them"
    ) in str(caught.value)
    assert "--outputs" not in str(caught.value)
    with pytest.raises(ValueError, match="fail_on 'fatal'"):
        assert_pp_safe(never, fail_on="fatal")


def test_outputs_as_a_callable():
    good = fixture("entropy_good.py:EntropyObserver")
    output = fixture("entropy_good.py:EntropyOutput")
    import torch

    report = pp_safety_report(good, outputs=lambda: [output(torch.tensor([1.0, 2.0]))])
    assert report.findings == ()
    assert report.data["observer"]["outputs_given"] is True


TEST_FILE = """
import sys
sys.path.insert(0, {observers!r})
from entropy_good import EntropyObserver as Good
from entropy_list import EntropyObserver as Leaking

def test_good(pp_safe):
    pp_safe(Good)

def test_leaking(pp_safe):
    pp_safe(Leaking)
"""


def _pytest(tmp_path, *args, env=None):
    (tmp_path / "test_integration.py").write_text(
        textwrap.dedent(TEST_FILE.format(observers=str(OBSERVERS))), encoding="utf-8"
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def test_the_fixture_comes_from_the_pytest11_entry_point(tmp_path):
    from importlib.metadata import entry_points

    found = [e for e in entry_points(group="pytest11") if e.name == "ppaux"]
    if not found:
        pytest.skip("ppaux installed without its entry points (reinstall: pip install -e .)")
    assert found[0].value == "ppaux.testing.plugin"
    result = _pytest(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 1 passed" in result.stdout
    # Failing output reads well in pytest's report: the finding and sglang's own message.
    assert "sampling observer EntropyObserver is not PP-safe: 1 finding" in result.stdout
    assert "sglang raises: RuntimeError: auxiliary PP output 'entropy' is not a tensor" in (
        result.stdout
    )
    assert "ppaux/observer" not in result.stdout  # ppaux's frames are hidden


UNUSABLE_FILE = """
def test_not_an_observer(pp_safe):
    class NotAnObserver:
        pass
    pp_safe(NotAnObserver)

def test_missing_attribute(pp_safe):
    pp_safe({observers!r} + "/entropy_good.py:NoSuchObserver")
"""


def test_an_unusable_target_is_one_line_in_pytests_report(tmp_path):
    (tmp_path / "test_unusable.py").write_text(
        textwrap.dedent(UNUSABLE_FILE.format(observers=str(OBSERVERS))), encoding="utf-8"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "ppaux.testing.plugin",
            str(tmp_path / "test_unusable.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        timeout=300,
    )
    assert "2 failed" in result.stdout, result.stdout + result.stderr
    wanted = (
        "ppaux.observer.target.TargetError: 'test_not_an_observer.<locals>.NotAnObserver': "
        "calling the class test_not_an_observer.<locals>.NotAnObserver gave a NotAnObserver, "
        "which is not a sampling observer: it lacks is_active, before_grammar, after_sample"
    )
    lines = result.stdout.splitlines()
    assert [line.split(maxsplit=1)[1] for line in lines if line.startswith("E ")] == [
        wanted,
        "ppaux.observer.target.TargetError: "
        f"{OBSERVERS}/entropy_good.py:NoSuchObserver: {OBSERVERS}/entropy_good.py has no "
        "attribute 'NoSuchObserver'",
    ], result.stdout
    assert "ppaux/observer" not in result.stdout  # no frames of ppaux's own code
    assert "ppaux/testing/" not in result.stdout


def test_without_autoload_the_plugin_is_named_explicitly(tmp_path):
    result = _pytest(tmp_path, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "fixture 'pp_safe' not found" in result.stdout
    result = _pytest(
        tmp_path, "-p", "ppaux.testing.plugin", env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    )
    assert "1 failed, 1 passed" in result.stdout
    # docs/observers.md: the plugin's own name turns it on, as for any entry-point plugin.
    from importlib.metadata import entry_points

    if not [e for e in entry_points(group="pytest11") if e.name == "ppaux"]:
        return  # installed without its entry points: only the module's name can work
    result = _pytest(tmp_path, "-p", "ppaux", env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "1 failed, 1 passed" in result.stdout, result.stdout + result.stderr


def test_the_plugin_is_inert_until_used():
    code = (
        "import sys, ppaux.testing.plugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('torch', 'ppaux.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    loaded = ast.literal_eval(out.strip())
    assert "ppaux.testing.plugin" in loaded
    assert [m for m in loaded if m.startswith("torch")] == []
    assert [m for m in loaded if m.startswith("ppaux.testing.")] == ["ppaux.testing.plugin"]
    assert "ppaux.observer" not in loaded and "ppaux.testing.assertions" not in loaded


def test_in_hand_the_judge_is_loaded_before_rank0s_process_imports_the_target(monkeypatch):
    # Rank 0's fresh process imports the object's module again, whose code could write ppaux's
    # own files: every module of the judge is imported before that process starts.
    import ppaux.observer.handnotes as handnotes
    import ppaux.observer.judge_loading as judge_loading

    order: list[str] = []
    load_judge, hand_rank0 = judge_loading.load_judge, handnotes.hand_rank0

    def loading() -> None:
        order.append("judge")
        load_judge()

    def starting(*args, **kwargs):
        order.append("rank 0")
        return hand_rank0(*args, **kwargs)

    monkeypatch.setattr(judge_loading, "load_judge", loading)
    monkeypatch.setattr(handnotes, "hand_rank0", starting)
    assert assert_pp_safe(fixture("entropy_good.py:EntropyObserver")).findings == ()
    assert order[:2] == ["judge", "rank 0"]


def test_a_pool_started_at_import_warns_in_hand_as_on_the_command_line(tmp_path, monkeypatch):
    from helpers import cli

    # In hand, the import-time pool is seen where rank 0's fresh process imports the module
    # again (the test suite's hook would fork rank 0 from this process instead).
    monkeypatch.delenv("PPAUX_TEST_RANK0_FORK", raising=False)

    text = (OBSERVERS / "entropy_good.py").read_text(encoding="utf-8")
    pool = "from concurrent.futures import ThreadPoolExecutor\n_POOL = ThreadPoolExecutor(1)\n"
    pool += "_POOL.submit(sum, [1])\n"
    (tmp_path / "pooled.py").write_text(text.replace("import torch\n", "import torch\n" + pool, 1))
    target = f"{tmp_path / 'pooled.py'}:EntropyObserver"
    shown = cli("check-observer", target, "--batch-size", "2", "--steps", "1")
    assert shown.exit_code == 0 and "PP718 warning" in shown.stdout
    for given in (target, None):  # by name, then in hand
        given = load_object(target) if given is None else given
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            report = assert_pp_safe(given, batch_sizes=(2,), steps=1)
        assert [f.code for f in report.findings] == ["PP718"], (given, report.findings)
        assert [type(w.message) for w in said] == [LeftRunningWarning]
        assert "ThreadPoolExecutor" in str(said[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_pp_safe(load_object(target), batch_sizes=(2,), steps=1, ignore=["PP718"])
