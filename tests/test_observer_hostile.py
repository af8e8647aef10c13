"""``ppaux check-observer`` and ``assert_pp_safe`` against targets that misbehave as programs:
``sys.exit()`` anywhere in their code is the target's failure (never ppaux's exit status), their
prints never reach the report on stdout, and the report is never written over their files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import REPO, cli, ppaux_process
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.observer import TargetError, check_observer, load_observer

pytestmark = pytest.mark.torch

GOOD = (REPO / "fixtures" / "observers" / "entropy_good.py").read_text(encoding="utf-8")


def observer_file(
    tmp_path: Path, name: str, *, exit_in: str | None = None, code: str = "0"
) -> Path:
    """The worked example's good observer, with ``sys.exit(code)`` at the top of ``exit_in``."""
    text = GOOD
    if exit_in is not None:
        marker = f"def {exit_in}(self"
        assert text.count(marker) == 1, exit_in
        head, _, tail = text.partition(marker)
        signature, _, body = tail.partition("\n")
        text = f"{head}{marker}{signature}\n        import sys\n\n        sys.exit({code})\n{body}"
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------
# sys.exit() in the target


@pytest.mark.parametrize(
    ("call", "shown"),
    [
        ("sys.exit(0)", "SystemExit: 0"),
        ("sys.exit(3)", "SystemExit: 3"),
        ("sys.exit()", "SystemExit"),
    ],
)
def test_an_exit_at_import_is_one_error_line_and_exit_2(tmp_path, call, shown):
    file = tmp_path / "exits.py"
    file.write_text(f"import sys\n\n{call}\n", encoding="utf-8")
    result = cli("check-observer", f"{file}:X")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == (
        f"ppaux: error: {file}:X: running {file} raised {shown} (at {file}:3)\n"
    )


def test_an_exit_while_a_module_is_imported_is_named(tmp_path, monkeypatch):
    (tmp_path / "exits_on_import_hj.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = cli("check-observer", "exits_on_import_hj:Observer")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        "ppaux: error: exits_on_import_hj:Observer: importing 'exits_on_import_hj' raised "
        "SystemExit: 0"
    )
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("method", "side"),
    [
        ("is_active", "the last stage (or the single GPU)"),
        ("before_grammar", "the last stage (or the single GPU)"),
        ("after_sample", "the last stage (or the single GPU)"),
        ("to_pp_tensors", "the last stage"),
        ("from_pp_tensors", "rank 0"),
        ("copy_to_host", None),
        ("consume", None),
    ],
)
def test_an_exit_in_a_driven_method_is_pp710_with_exit_1(tmp_path, method, side):
    file = observer_file(tmp_path, f"exit_in_{method}.py", exit_in=method, code="0")
    result = cli("check-observer", f"{file}:EntropyObserver", "--format", "json")
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["findings"]
    found = [f for f in findings if f["code"] == "PP710"]
    assert found, findings
    assert f"{method} raised SystemExit: 0" in found[0]["message"]
    if side is not None:
        assert side in found[0]["message"]


def test_an_exit_in_the_constructor_is_the_targets_failure(tmp_path):
    file = tmp_path / "exit_init.py"
    file.write_text(
        GOOD + "\n\nclass Quits(EntropyObserver):\n    def __init__(self):\n"
        "        raise SystemExit(4)\n",
        encoding="utf-8",
    )
    result = cli("check-observer", f"{file}:Quits")
    assert result.exit_code == 2, result.output
    assert "calling the class Quits raised SystemExit: 4" in result.stderr
    assert result.stderr.count("\n") == 1


def test_an_exit_in_the_outputs_factory_is_one_line(tmp_path):
    observer = observer_file(tmp_path, "obs.py")
    outputs = tmp_path / "outs.py"
    outputs.write_text("import sys\n\n\ndef make():\n    sys.exit(0)\n", encoding="utf-8")
    result = cli("check-observer", f"{observer}:EntropyObserver", "--outputs", f"{outputs}:make")
    assert result.exit_code == 2, result.output
    assert (
        result.stderr
        == f"ppaux: error: {outputs}:make: calling make raised SystemExit: 0 (at {outputs}:5)\n"
    )


def test_an_exit_outside_the_driven_methods_is_still_the_targets(tmp_path, monkeypatch):
    # sys.exit() in a mapping's items(), which sglang's add calls after to_pp_tensors returned.
    text = GOOD.replace(
        '        return {"entropy": self.entropy}',
        "        class Quitting(dict):\n"
        "            def items(self):\n"
        "                raise SystemExit(7)\n\n"
        "        return Quitting(entropy=self.entropy)",
        1,
    )
    assert "Quitting" in text
    file = tmp_path / "items_exit_hj.py"
    file.write_text(text, encoding="utf-8")
    result = cli("check-observer", f"{file}:EntropyObserver", "--format", "json")
    # The target's process ended: a finding about the target, in a report of its own.
    assert result.exit_code == 1, result.output
    [ended] = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "PP715"]
    assert "SystemExit: 7" in ended["message"]
    from ppaux.testing import assert_pp_safe

    monkeypatch.syspath_prepend(str(tmp_path))
    import items_exit_hj

    with pytest.raises(AssertionError, match=r"EntropyObserver is not PP-safe: .*SystemExit: 7"):
        assert_pp_safe(items_exit_hj.EntropyObserver)


def test_keyboard_interrupt_is_never_swallowed(tmp_path):
    file = tmp_path / "ctrl_c.py"
    file.write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        load_observer(f"{file}:X")
    stops = observer_file(tmp_path, "stops.py")
    stops.write_text(
        stops.read_text(encoding="utf-8").replace(
            "        return EntropyOutput(state)", "        raise KeyboardInterrupt", 1
        ),
        encoding="utf-8",
    )
    # Raised by the target in its own process, it is the target's failure like any other
    # exception (a person's Ctrl-C reaches ppaux's process, which is not the target's): no
    # traceback through ppaux's worker, no end of the target's process.
    report = check_observer(f"{stops}:EntropyObserver")
    assert [f for f in report.findings if f.code == "PP715"] == []
    [raised] = [f for f in report.findings if f.code == "PP710"]
    assert "after_sample raised KeyboardInterrupt" in raised.message
    assert not any("Traceback" in note for note in report.notes)


def test_assert_pp_safe_turns_an_exit_into_an_assertion(tmp_path, monkeypatch):
    from ppaux.testing import assert_pp_safe

    file = observer_file(tmp_path, "exit_in_hook_hj.py", exit_in="after_sample", code="0")
    monkeypatch.syspath_prepend(str(tmp_path))
    import exit_in_hook_hj

    with pytest.raises(AssertionError) as caught:
        assert_pp_safe(exit_in_hook_hj.EntropyObserver)
    assert "PP710 error" in str(caught.value)
    assert "after_sample raised SystemExit: 0" in str(caught.value)
    # The same at import, named as any other import failure.
    with pytest.raises(TargetError, match=r"raised SystemExit: 2"):
        exits = tmp_path / "exits_now.py"
        exits.write_text("raise SystemExit(2)\n", encoding="utf-8")
        assert_pp_safe(f"{exits}:X")
    # And from an outputs callable of the test's own.
    with pytest.raises(AssertionError, match=r"raised SystemExit: 5 while ppaux checked it"):
        assert_pp_safe(exit_in_hook_hj.EntropyObserver, outputs=lambda: sys.exit(5))
    assert file.exists()


# ----------------------------------------------------------------------------------------------
# The target's prints


NOISY = """
import os
import subprocess
import sys

print("noisy at import")
os.write(1, b"noisy fd 1 at import\\n")
"""


def noisy_file(tmp_path: Path) -> Path:
    text = GOOD.replace("import torch\n", "import torch\n" + NOISY, 1)
    text = text.replace(
        "        return EntropyOutput(state)",
        "        print('noisy after_sample')\n"
        "        sys.stdout.write('noisy write\\n')\n"
        "        os.write(1, b'noisy fd 1\\n')\n"
        "        subprocess.run([sys.executable, '-c', 'print(\"noisy child\")'], check=True)\n"
        "        return EntropyOutput(state)",
        1,
    )
    assert text.count("noisy") == 6
    path = tmp_path / "chatty.py"
    path.write_text(text, encoding="utf-8")
    return path


def test_prints_go_to_the_output_callback_and_every_report_parses(tmp_path):
    # One run's report through each formatter (the CLI's own path, prints on descriptor 2 and
    # the report alone on 1, is the next test's).
    from ppaux.observer import ObserverOptions
    from ppaux.report.formats import gitlab, sarif
    from ppaux.report.formats import json as json_format

    file = noisy_file(tmp_path)
    shown: list[bytes] = []
    report = check_observer(
        f"{file}:EntropyObserver", ObserverOptions(steps=1), on_output=shown.append
    )
    assert report.findings == ()
    text = b"".join(shown).decode()
    assert "noisy at import" in text
    assert "noisy after_sample" in text
    for render in (json_format.render, sarif.render, gitlab.render):
        rendered = render(report)
        assert "noisy" not in rendered
        json.loads(rendered)


def test_prints_at_the_descriptor_level_never_reach_stdout(tmp_path):
    # A child process: print, sys.stdout, os.write(1) and a subprocess of the target all write
    # to the real descriptor 1 only there.
    file = noisy_file(tmp_path)
    result = ppaux_process(
        "check-observer",
        f"{file}:EntropyObserver",
        "--steps",
        "1",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["findings"] == []
    for line in ("noisy at import", "noisy fd 1 at import", "noisy after_sample", "noisy write"):
        assert line in result.stderr
    assert result.stderr.count("noisy fd 1\n") == 2  # batch sizes 1 and 4, one step each
    assert result.stderr.count("noisy child\n") == 2
    # Into a file with -o, the same: the report alone.
    out = tmp_path / "r.json"
    written = ppaux_process(
        "check-observer",
        f"{file}:EntropyObserver",
        "--steps",
        "1",
        "--format",
        "json",
        "-o",
        str(out),
        cwd=tmp_path,
    )
    assert written.returncode == 0, written.stderr
    assert written.stdout == ""
    assert json.loads(out.read_text(encoding="utf-8"))["findings"] == []


# ----------------------------------------------------------------------------------------------
# --output never goes over the target


def refused(result, output: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"ppaux: error: --output {output}: is the input")
    assert result.stderr.endswith("ppaux never writes over an input: give another output file\n")


def test_output_onto_the_target_file_is_refused(tmp_path):
    file = observer_file(tmp_path, "victim_obs.py")
    before = file.read_bytes()
    refused(cli("check-observer", f"{file}:EntropyObserver", "-o", str(file)), str(file))
    assert file.read_bytes() == before


def test_output_onto_the_outputs_file_is_refused(tmp_path):
    file = observer_file(tmp_path, "obs.py")
    outputs = tmp_path / "outs_v.py"
    outputs.write_text(
        "import torch\nfrom obs import EntropyOutput\n\n\ndef make():\n"
        "    return [EntropyOutput(torch.zeros(1))]\n",
        encoding="utf-8",
    )
    before = outputs.read_bytes()
    result = cli(
        "check-observer",
        f"{file}:EntropyObserver",
        "--outputs",
        f"{outputs}:make",
        "-o",
        str(outputs),
    )
    refused(result, str(outputs))
    assert outputs.read_bytes() == before


def test_output_onto_a_module_targets_files_is_refused(tmp_path, monkeypatch):
    package = tmp_path / "hj_victim_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    observer_file(package, "mod.py")
    (package / "alias.py").write_text("from .mod import EntropyObserver\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("alias.py",):
        before = (package / name).read_bytes()
        output = str(package / name)
        # The module's own file, found on the import path without running it.
        refused(cli("check-observer", "hj_victim_pkg.alias:EntropyObserver", "-o", output), output)
        assert (package / name).read_bytes() == before
    fine = tmp_path / "report.txt"
    result = cli("check-observer", "hj_victim_pkg.alias:EntropyObserver", "-o", str(fine))
    assert result.exit_code == 0, result.output
    # the verdict, then the table's title
    verdict, _, title = fine.read_text(encoding="utf-8").splitlines()[:3]
    assert verdict.endswith("input(s) not checked")
    assert title.startswith("EntropyObserver: transport wire")


# ----------------------------------------------------------------------------------------------
# Messages


def test_type_names_take_the_right_article(tmp_path):
    # The library's loaders give each reason; one CLI run of each kind shows it as the line.
    from ppaux.observer import load_outputs

    file = tmp_path / "things.py"
    file.write_text(
        "number = 5\n\n\ndef thing():\n    return object()\n\n\ndef many():\n    return 7\n\n\n"
        "def mixed():\n    return [None, 8]\n",
        encoding="utf-8",
    )
    lines = {
        "number": "is an int, not a sampling observer, a class or a factory (it lacks is_active, "
        "before_grammar, after_sample)",
        "thing": "calling the factory thing gave an object, which is not a sampling observer: "
        "it lacks is_active, before_grammar, after_sample",
    }
    for attr, reason in lines.items():
        with pytest.raises(TargetError) as raised:
            load_observer(f"{file}:{attr}")
        assert str(raised.value) == f"{file}:{attr}: {reason}"
    result = cli("check-observer", f"{file}:number")
    assert result.stderr == f"ppaux: error: {file}:number: {lines['number']}\n"
    outputs = {
        "number": "is an int, not a zero-argument callable",
        "many": "returned an int: neither an auxiliary output (no copy_to_host) nor an iterable "
        "of them",
        "mixed": "item 1 is an int, not an auxiliary output (no copy_to_host)",
    }
    for attr, reason in outputs.items():
        with pytest.raises(TargetError) as raised:
            list(load_outputs(f"{file}:{attr}"))
        assert str(raised.value) == f"{file}:{attr}: {reason}"
    observer = observer_file(tmp_path, "obs.py")
    result = cli("check-observer", f"{observer}:EntropyObserver", "--outputs", f"{file}:mixed")
    assert result.stderr == f"ppaux: error: {file}:mixed: {outputs['mixed']}\n"


def test_impl_sglang_without_sglang_names_the_way_out():
    import importlib.util

    if importlib.util.find_spec("sglang") is not None:
        pytest.skip("sglang is installed here")
    target = f"{REPO / 'fixtures' / 'observers' / 'entropy_good.py'}:EntropyObserver"
    result = cli("check-observer", target, "--impl", "sglang")
    assert result.exit_code == 2
    assert result.stderr == (
        "ppaux: error: --impl sglang: sglang is not installed in this Python environment; give "
        "--sglang-path an unpacked tree or a wheel\n"
    )


# ----------------------------------------------------------------------------------------------
# The same through sglang's own runtime


@pytest.mark.sglang_runtime
@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_prints_and_an_exit_through_sglangs_own_path(tmp_path, version):
    # sglang's SamplingBatchInfo calls before_grammar, and sglang's pop calls from_pp_tensors,
    # which exits: PP710 on rank 0, exit 1, the report alone on stdout.
    import sglang_runtime

    file = noisy_file(tmp_path)
    text = file.read_text(encoding="utf-8").replace(
        '        return EntropyOutput(tensors["entropy"])',
        '        print("noisy from_pp_tensors")\n        sys.exit(0)',
        1,
    )
    assert "noisy from_pp_tensors" in text
    file.write_text(text, encoding="utf-8")
    runtime = sglang_runtime.sglang_runtime(version)
    args = ["-m", "ppaux_cli", "check-observer", f"{file}:EntropyObserver", "--transport"]
    args += ["sglang", "--batch-size", "2", "--steps", "1", "--format", "json"]
    done = runtime.run(args, timeout=600, cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["observer"]["sampling_info"] == "sglang"
    [finding] = document["findings"]
    assert finding["code"] == "PP710"
    assert "from_pp_tensors raised SystemExit: 0 on rank 0" in finding["message"]
    for line in ("noisy at import", "noisy after_sample", "noisy fd 1", "noisy child"):
        assert line in done.stderr


# ----------------------------------------------------------------------------------------------
# Attributes outside a dataclass's declared fields are compared too

LATE_ATTRIBUTES = """
from dataclasses import dataclass

import torch


@dataclass
class Host:
    scores: torch.Tensor
    scale: float

    def consume(self, batch, commits):
        for i, (req, commit) in enumerate(zip(batch.reqs, commits)):
            if commit is not None:
                # an attribute of consume's own on the request, not one of its fields
                req.scaled = float(self.scores[i]) * self.scale


@dataclass
class Out:
    scores: torch.Tensor

    def __post_init__(self):
        self.scale = 1.0  # set after construction: not a declared field

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.scores), self.scale)

    def to_pp_tensors(self):
        return {"scores": self.scores}  # the scale never crosses to rank 0


class Obs:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return torch.log_softmax(logits, dim=-1)

    def after_sample(self, state, token_ids):
        out = Out(state.gather(-1, token_ids.view(-1, 1)).squeeze(-1).clone())
        out.scale = 0.5
        return out

    def from_pp_tensors(self, tensors):
        return Out(tensors["scores"])
"""


def test_attributes_set_after_construction_are_compared_on_both_paths(tmp_path):
    path = tmp_path / "late.py"
    path.write_text(LATE_ATTRIBUTES, encoding="utf-8")
    result = cli("check-observer", f"{path}:Obs", "--format", "json")
    assert result.exit_code == 1, result.output
    found = {(f["code"], f["key"]) for f in json.loads(result.stdout)["findings"]}
    assert ("PP711", ".scale") in found  # the output rank 0 rebuilt lost it
    assert ("PP712", ".scaled") in found  # so did what consume wrote on the request


def test_a_memory_address_in_a_repr_is_no_difference():
    import threading

    import torch

    from ppaux.observer.compare import differences, records

    def made() -> dict[str, object]:
        return {"lock": threading.Lock(), "generator": torch.Generator(), "plain": object()}

    assert differences(records(made()), records(made())) == []
    # A string is a value: the same text with another number in it still differs.
    assert differences(records({"v": "at 0x7f00aa11bb22"}), records({"v": "at 0x7f00aa11bb23"}))
    # An object whose state differs still differs, addresses aside.
    assert differences(records({"e": ValueError("a")}), records({"e": ValueError("b")}))


def test_an_endless_outputs_generator_is_one_line_not_all_memory(tmp_path):
    observer = observer_file(tmp_path, "obs.py")
    outputs = tmp_path / "endless.py"
    outputs.write_text(
        "import itertools\n\nfrom obs import EntropyOutput\n\nimport torch\n\n\n"
        "def make():\n"
        "    return (EntropyOutput(torch.zeros(1)) for _ in itertools.count())\n",
        encoding="utf-8",
    )
    result = cli("check-observer", f"{observer}:EntropyObserver", "--outputs", f"{outputs}:make")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"ppaux: error: {outputs}:make: yields more than 1000 outputs (an endless generator?) "
        "(limit max_outputs=1000 reached); give fewer\n"
    )


def test_the_outputs_bound_is_handed_to_the_child(tmp_path):
    observer = observer_file(tmp_path, "obs.py")
    outputs = tmp_path / "five.py"
    outputs.write_text(
        "from obs import EntropyOutput\n\nimport torch\n\n\n"
        "def make():\n"
        "    return (EntropyOutput(torch.zeros(1)) for _ in range(5))\n",
        encoding="utf-8",
    )
    args = ("check-observer", f"{observer}:EntropyObserver", "--outputs", f"{outputs}:make")
    result = cli(*args, "--limit", "max_outputs=3")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"ppaux: error: {outputs}:make: yields more than 3 outputs (an endless generator?) "
        "(limit max_outputs=3 reached); give fewer\n"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_child_dies_with_ppaux_when_ppaux_is_killed(tmp_path):
    import signal
    import subprocess
    import time

    hang = tmp_path / "hang_marker_obs.py"
    hang.write_text(
        f"import sys\n\nsys.path.insert(0, {str(REPO / 'fixtures' / 'observers')!r})\n"
        "from entropy_good import EntropyObserver\n\n\n"
        "class Hang(EntropyObserver):\n"
        "    def after_sample(self, state, token_ids):\n"
        "        import os\n        import pathlib\n        import time\n\n"
        f"        pathlib.Path({str(tmp_path / 'hanging')!r}).write_text(str(os.getpid()))\n"
        "        time.sleep(600)\n",
        encoding="utf-8",
    )

    def workers() -> list[int]:
        """The check's child, while it runs (it wrote its pid when it reached the hang)."""
        try:
            pid = int((tmp_path / "hanging").read_text(encoding="utf-8"))
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                line = handle.read()
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                state = handle.read().rpartition(")")[2].split()[0]
        except (OSError, ValueError):
            return []
        return [pid] if b"ppaux.observer.worker" in line and state != "Z" else []

    process = subprocess.Popen(
        [sys.executable, "-m", "ppaux_cli", "check-observer", f"{hang}:Hang"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not workers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert workers(), "the check's child never reached the hanging method"
    process.send_signal(signal.SIGTERM)  # what a CI job's timeout sends
    process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while workers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert workers() == []


# ----------------------------------------------------------------------------------------------
# Messages and keys of megabytes


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("ab \n\r\t\x0b\u2028"), max_size=3000))
def test_a_message_is_kept_as_its_first_line_cut(text):
    from ppaux.observer.drive import MAX_MESSAGE, message_line

    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    kept = message_line(ValueError(text))
    if len(first) <= MAX_MESSAGE and len(text) <= 4 * MAX_MESSAGE:
        assert kept == first
    else:
        # Cut: the line's start, then the whole message's length.
        assert kept.startswith(first[:MAX_MESSAGE][: len(kept.partition("... (")[0])])
        assert kept.endswith(f"... ({len(text):,} characters in all)")
        assert len(kept) <= MAX_MESSAGE + 40


BIG_MESSAGE = """
import torch


class Host:
    def consume(self, batch, commits):
        pass


class Out:
    def __init__(self, value):
        self.value = value

    def copy_to_host(self, copy_tensor):
        return Host()

    def to_pp_tensors(self):
        raise ValueError("x" * (5 << 20))


class Obs:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits

    def after_sample(self, state, token_ids):
        return Out(state[:, 0].clone())

    def from_pp_tensors(self, tensors):
        return Out(tensors["value"])
"""


def test_a_message_of_megabytes_is_cut_in_the_child(tmp_path):
    # to_pp_tensors raises a 5 MB one-line message at every step: the report quotes its start
    # and its length, never the whole of it.
    (tmp_path / "big.py").write_text(BIG_MESSAGE, encoding="utf-8")
    report = check_observer(f"{tmp_path / 'big.py'}:Obs")
    assert [item.code for item in report.findings] == ["PP710"]
    document = json.dumps(report.data)
    assert "5,242,880 characters in all" in document
    assert "x" * 1000 not in document


def module_target(tmp_path: Path, loads: str) -> Path:
    """An observer file whose module imports ``helper`` (``loads``: how), beside it."""
    file = observer_file(tmp_path, "obs_imports.py")
    text = file.read_text(encoding="utf-8").replace("import torch\n", f"import torch\n{loads}\n", 1)
    file.write_text(text, encoding="utf-8")
    return file


def test_output_onto_a_module_file_beside_the_target_is_refused_before_it_runs(tmp_path):
    helper = tmp_path / "helper.py"
    helper.write_text("VALUE = 1\n", encoding="utf-8")
    file = module_target(tmp_path, "import helper")
    result = cli("check-observer", f"{file}:EntropyObserver", "-o", str(helper))
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"ppaux: error: --output {helper}: is a Python module's file, which the target may "
        "import; ppaux never writes over code: give another output file\n"
    )
    assert helper.read_text(encoding="utf-8") == "VALUE = 1\n"


def test_output_onto_a_file_the_target_loaded_as_a_module_is_refused(tmp_path):
    helper = tmp_path / "helper.src"
    helper.write_text("VALUE = 1\n", encoding="utf-8")
    loads = (
        "import importlib.machinery, importlib.util, pathlib\n"
        "_loader = importlib.machinery.SourceFileLoader(\n"
        "    'helper', str(pathlib.Path(__file__).parent / 'helper.src'))\n"
        "_spec = importlib.util.spec_from_loader('helper', _loader)\n"
        "helper = importlib.util.module_from_spec(_spec)\n"
        "_loader.exec_module(helper)\n"
        "import sys; sys.modules['helper'] = helper\n"
    )
    file = module_target(tmp_path, loads)
    result = cli("check-observer", f"{file}:EntropyObserver", "--steps", "1", "-o", str(helper))
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"ppaux: error: --output {helper}: is the file of module 'helper', which the target "
        "imported; ppaux never writes over the target's code: give another output file\n"
    )
    assert helper.read_text(encoding="utf-8") == "VALUE = 1\n"
