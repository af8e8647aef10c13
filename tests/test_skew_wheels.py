"""The capability analyser and the release table against the real sglang wheels (0.5.18 - 0.5.23).

Wheels come from ``tests/wheels.py`` (downloaded once into ``$PPAUX_WHEEL_CACHE``). Every fact of
``ppaux/data/releases.json`` is re-read from the wheels here, as are the facts of the reference
page's sections 1, 3 and 4 that the table is built on.
"""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
import source_faults
import wheels
from helpers import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.sglang import TRANSPORT_FILE, releases
from ppaux.sglang_source import analyse

pytestmark = pytest.mark.wheels

VERSIONS = ("0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
SHA256 = {
    "0.5.19": "4fe27cef77f9b65dfbc7123145d348eef6b0291456e97031b4ca7ad47e0f70eb",
    **{
        v: "0b6db77de1177db6275bcc6fbf92abb8403b13c55ae7df263d06987779d45f5d"
        for v in ("0.5.20", "0.5.21", "0.5.22", "0.5.23")
    },
}
#: The files read for a few definitions each, and their roles.
WHOLE_FILES = {
    "srt/managers/scheduler_pp_mixin.py": "scheduler",
    "srt/managers/utils.py": "logprobs",
    "srt/distributed/parallel_state.py": "wire",
}
KEY_COUNTS = {"0.5.18": 14, "0.5.19": 14, "0.5.20": 16, "0.5.21": 17, "0.5.22": 18, "0.5.23": 18}


@pytest.fixture(scope="module", params=VERSIONS)
def release(request):
    wheel = wheels.sglang_wheel(request.param)
    return request.param, wheel, analyse(str(wheel))


def test_analysis_matches_the_table(release):
    version, _, cap = release
    facts = releases.release(version)
    family = releases.family_of(version)
    assert (cap.origin, cap.version) == ("wheel", version)
    assert cap.unknown == {}
    assert list(cap.logprob_keys) == list(facts.logprob_keys)
    assert len(cap.logprob_keys) == KEY_COUNTS[version]
    assert list(cap.receiver_logprob_keys) == list(facts.receiver_logprob_keys)
    assert list(cap.receiver_sampling_mask_keys) == list(facts.receiver_sampling_mask_keys)
    assert list(cap.output_keys) == list(facts.output_keys)
    assert list(cap.optional_output_keys) == list(facts.optional_output_keys)
    assert (cap.wire, cap.non_tensor_values) == ("release", "pickled")
    assert {k: cap.digests[k] for k in family.wire_digests} == dict(family.wire_digests)
    if version == "0.5.18":
        assert (cap.transport, cap.match, cap.scheduler_calls) == (
            "absent",
            "absent",
            {"add": False, "pop": False},
        )
        return
    assert (cap.transport, cap.match, cap.match_family) == ("present", "release", family.name)
    assert cap.prefix == cap.receiver_prefix == "__sampling_observer_output__."
    assert cap.sender_validates and cap.receiver_validates
    assert set(cap.sender_checks.values()) == {True}
    assert set(cap.receiver_checks.values()) == {True}
    assert cap.scheduler_calls == {"add": True, "pop": True}
    assert {k: cap.digests[k] for k in family.transport_digests} == dict(family.transport_digests)


def test_reference_section_1(release):
    version, wheel, _ = release
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        path = f"sglang/{TRANSPORT_FILE}"
        if version == "0.5.18":
            assert path not in names
            return
        data = archive.read(path)
        metadata = archive.read(f"sglang-{version}.dist-info/METADATA").decode()
    assert hashlib.sha256(data).hexdigest() == SHA256[version]
    assert data.count(b"\n") == releases.family_of(version).transport_lines
    defined_in = releases.family_of(version).aux_output_defined_in
    assert defined_in in names
    assert f"Requires-Dist: torch=={releases.release(version).torch}\n" in metadata


def test_torch_pin_of_0_5_18():
    wheel = wheels.sglang_wheel("0.5.18")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read("sglang-0.5.18.dist-info/METADATA").decode()
    assert "Requires-Dist: torch==2.13.0\n" in metadata


def _verdict(relative: str, data: bytes) -> tuple[str, str | None]:
    """The analysis's status and reason for the file ``relative`` holding ``data``."""
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / "sglang" / relative
        target.parent.mkdir(parents=True)
        target.write_bytes(data)
        (Path(scratch) / "sglang" / "__init__.py").write_text("")
        cap = analyse(scratch)
    (file,) = [f for f in cap.files if f.role == WHOLE_FILES[relative]]
    return file.status, file.reason


def _real(relative: str) -> bytes:
    with zipfile.ZipFile(wheels.sglang_wheel("0.5.23")) as archive:
        return archive.read("sglang/" + relative)


@settings(max_examples=40, deadline=None)
@given(
    relative=st.sampled_from(sorted(WHOLE_FILES)),
    fault=st.sampled_from(source_faults.FAULTS),
    pick=st.integers(0, 100_000),
    damage=st.none() | st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)),
)
def test_a_real_files_status_is_cpythons(relative, fault, pick, damage):
    """The real 0.5.23 files the analysis reads a few definitions of, with one fault put in at
    a statement boundary or one byte changed: the file's status is what ``ast.parse`` of the
    whole file says, and so is the reason where the fault is one statement's."""
    original = _real(relative)
    if damage is None:
        data = source_faults.with_fault(original, fault, pick)
    else:
        data = source_faults.damaged(original, [damage])
    status, reason = _verdict(relative, data)
    expected = source_faults.cpython_verdict(data, "<file>")
    assert status == expected[0]
    if damage is None and fault not in BRACKET_FAULTS:
        assert reason == expected[1]


#: Faults that leave a bracket open or close one that is not: the rest of the file's brackets
#: then pair differently, one fault making several.
BRACKET_FAULTS = (b"def broken(:", b"x = (", b"x = 1)")


def test_a_changed_byte_that_makes_several_faults_gets_cpythons_message():
    """A byte changed to ``n`` in the scheduler file makes several faults; CPython names the
    first it meets (an unexpected indent on line 762), and so does ppaux (it named an unmatched
    ``)`` three lines on, before an unexpected indent was no longer overridden by a later
    tokenizer error)."""
    relative = "srt/managers/scheduler_pp_mixin.py"
    data = source_faults.damaged(_real(relative), [(597325, 110)])
    assert _verdict(relative, data) == source_faults.cpython_verdict(data, "<file>")


SCHEDULER_FILE = "sglang/srt/managers/scheduler_pp_mixin.py"
SCHEDULER_METHODS = ("_pp_prepare_tensor_dict", "_pp_send_dict_to_next_stage")


def _scheduler_methods(wheel) -> dict[str, tuple[ast.FunctionDef, str]]:
    """The two methods of SchedulerPPMixin in a wheel: their nodes and source text."""
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read(SCHEDULER_FILE).decode()
    tree = ast.parse(source)
    (mixin,) = [
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SchedulerPPMixin"
    ]
    return {
        f"SchedulerPPMixin.{n.name}": (n, ast.get_source_segment(source, n, padded=True))
        for n in mixin.body
        if isinstance(n, ast.FunctionDef) and n.name in SCHEDULER_METHODS
    }


def test_scheduler_digests_are_the_wheels(release):
    from ppaux.sglang_source.digest import node_digest

    version, wheel, _ = release
    methods = _scheduler_methods(wheel)
    assert len(methods) == 2
    assert {name: node_digest(node) for name, (node, _) in methods.items()} == dict(
        releases.release(version).scheduler_digests
    )


def test_output_group_is_the_wheels(release):
    # The all_gather_group the last stage's send passes, read from the wheel's call itself.
    version, wheel, _ = release
    node, _ = _scheduler_methods(wheel)["SchedulerPPMixin._pp_send_dict_to_next_stage"]
    (call,) = [
        c
        for c in ast.walk(node)
        if isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and c.func.attr == "send_tensor_dict"
    ]
    (given,) = [k.value for k in call.keywords if k.arg == "all_gather_group"]
    assert ast.unparse(given) == releases.release(version).output_all_gather_group
    # Read by hand: 0.5.18 and 0.5.19 drop the group only with DSA prefill context parallel.
    expected = {
        "0.5.18": "self.attn_tp_group if self.require_attn_tp_allgather else None",
        "0.5.19": "self.attn_tp_group if self.require_attn_tp_allgather else None",
    }.get(version, "self.attn_tp_group")
    assert ast.unparse(given) == expected
    assert releases.output_group(version)


def _provenance_of(tmp_path, method_source: str) -> str:
    # A stand-in sglang package holding only the mixin, imported in a child process (this
    # process may hold other sglang modules), asked for the method's provenance.
    package = tmp_path / "sglang" / "srt" / "managers"
    package.mkdir(parents=True)
    for folder in (tmp_path / "sglang", tmp_path / "sglang" / "srt", package):
        (folder / "__init__.py").write_text("")
    (package / "scheduler_pp_mixin.py").write_text(
        "from __future__ import annotations\n\n\nclass SchedulerPPMixin:\n" + method_source + "\n"
    )
    probe = (
        "import sglang.srt.managers.scheduler_pp_mixin as m\n"
        "from ppaux.capture.culprit import provenance\n"
        "print(provenance(m.SchedulerPPMixin._pp_prepare_tensor_dict)['code'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_culprit_in_the_scheduler_is_told_release_or_modified(tmp_path):
    (_, source) = _scheduler_methods(wheels.sglang_wheel("0.5.23"))[
        "SchedulerPPMixin._pp_prepare_tensor_dict"
    ]
    assert _provenance_of(tmp_path / "release", source) == "release"
    # One more statement at the end of the method: sglang's file, not the release's code.
    modified = source.rstrip() + "\n        tensor_dict['__sampling_observer_output__.x'] = []\n"
    assert _provenance_of(tmp_path / "modified", modified) == "modified"
