"""``check-observer --transport sglang`` on sglang 0.5.19 and 0.5.23's own runtime: the real
``GroupCoordinator`` wire between two processes over gloo, the real ``SamplingBatchInfo`` (its
``apply_logits_bias_with_observer`` calls ``before_grammar``), the real
``SchedulerBatchResultProcessor.consume_auxiliary_output`` and ``async_d2h``. Expectations are
written out by hand from the releases' code."""

from __future__ import annotations

import json
import textwrap

import pytest
import sglang_runtime
from helpers import REPO

pytestmark = pytest.mark.sglang_runtime

RELEASES = ["0.5.19", "0.5.23"]
OBSERVERS = REPO / "fixtures" / "observers"

#: (name, target, options): each is checked once per release, all in one process.
CHECKS = [
    ("good", "entropy_good.py:EntropyObserver", {}),
    ("list", "entropy_list.py:EntropyObserver", {}),
    ("list-legacy", "entropy_list.py:EntropyObserver", {"sender": "legacy"}),
    (
        "list-legacy-sglang-impl",
        "entropy_list.py:EntropyObserver",
        {"sender": "legacy", "impl": "sglang"},
    ),
    ("numpy", "faulty.py:NumpyObserver", {}),
    ("half", "faulty.py:HalfOnWireObserver", {}),
    ("no-from", "faulty.py:NoFromPPObserver", {"impl": "sglang"}),
    ("sparse", "faulty.py:SparseObserver", {}),
]

SCRIPT = """
import json, sys
from ppaux.observer import ObserverOptions, check_observer
from ppaux.replay import open_wire
out = {}
# One receiving process for every check (a sender-side failure, the sparse tensor, comes last:
# it ends the receiver).
with open_wire("sglang", device="cpu", timeout_s=300) as wire:
    for name, target, options in json.loads(sys.argv[1]):
        report = check_observer(
            target,
            ObserverOptions(transport="sglang", batch_sizes=(2,), steps=2, **options),
            wire=wire,
        )
        out[name] = {
            "findings": [[f.code, f.key, f.sglang_error, f.message] for f in report.findings],
            "observer": report.data["observer"],
            "steps": report.data["steps"],
        }
print("REPORT " + json.dumps(out))
"""

_runs: dict[str, dict] = {}
#: The release whose Req the stand-in request is compared with: its run of the checks above
#: then runs STANDINS_MATCH below, in the same process (which has imported sglang already).
STANDINS_RELEASE = "0.5.23"


def checked(version: str, part: str = "REPORT") -> dict:
    """What the process of ``version`` printed after ``part``: the checks' reports (REPORT),
    or, for :data:`STANDINS_RELEASE`, the stand-ins' comparison with the release's (STANDINS,
    MODES)."""
    if version not in _runs:
        runtime = sglang_runtime.sglang_runtime(version)
        checks = [[name, f"{OBSERVERS / target}", options] for name, target, options in CHECKS]
        script = textwrap.dedent(SCRIPT)
        if version == STANDINS_RELEASE:
            script += textwrap.dedent(STANDINS_MATCH) + textwrap.dedent(FORWARD_MODES)
        done = runtime.run(["-c", script, json.dumps(checks)], timeout=900, helpers_forked=True)
        found = {
            head: json.loads(rest)
            for head, _, rest in (x.partition(" ") for x in done.stdout.splitlines())
            if head in ("REPORT", "STANDINS", "MODES")
        }
        assert done.returncode == 0 and "REPORT" in found, done.stdout[-3000:] + done.stderr[-3000:]
        _runs[version] = found
    assert part in _runs[version], f"the process of {version} printed no {part} line"
    return _runs[version][part]


@pytest.mark.parametrize("version", RELEASES)
def test_a_good_observer_passes_through_sglangs_own_path(version):
    good = checked(version)["good"]
    assert good["findings"] == []
    assert good["observer"]["sampling_info"] == "sglang"
    assert good["observer"]["result_processing"] == "sglang"
    assert good["observer"]["requests"] == f"sglang {version} Req/ScheduleBatch"
    assert [(r["batch_size"], r["step"], r["pp"], r["differences"]) for r in good["steps"]] == [
        (2, 0, None, []),
        (2, 1, None, []),
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_a_list_is_refused_by_add_and_by_pop_behind_a_legacy_sender(version):
    runs = checked(version)
    [(code, key, error, message)] = runs["list"]["findings"]
    assert (code, key, error) == (
        "PP705",
        "entropy",
        "auxiliary PP output 'entropy' is not a tensor",
    )
    assert message.startswith("the last stage's add raises RuntimeError: auxiliary PP output")
    for name in ("list-legacy", "list-legacy-sglang-impl"):
        [(code, key, error, message)] = runs[name]["findings"]
        assert (code, key, error) == (
            "PP706",
            "entropy",
            "received a non-tensor auxiliary PP output",
        )
        # The list crossed sglang's real wire inside the pickled metadata and arrived a list.
        assert "the entry at fault is 'entropy', a list [" in message


@pytest.mark.parametrize("version", RELEASES)
def test_numpy_arrays_and_sparse_tensors(version):
    runs = checked(version)
    [(code, key, error, message)] = runs["numpy"]["findings"]
    assert (code, key, error) == (
        "PP705",
        "entropy",
        "auxiliary PP output 'entropy' is not a tensor",
    )
    assert "a ndarray" in message
    [(code, key, error, message)] = runs["sparse"]["findings"]
    assert (code, key, error) == ("PP709", "entropy", None)
    # The scheduler passes its attention-TP group (of one rank here), whose reshape comes
    # before c10d's send and has no sparse kernel.
    assert "fails on the sender: RuntimeError: reshape is not implemented for sparse" in message


@pytest.mark.parametrize("version", RELEASES)
def test_silent_corruption_is_named_and_sglang_raises_nothing(version):
    found = checked(version)["half"]["findings"]
    assert [(code, key) for code, key, _, _ in found] == [
        ("PP711", ".entropy"),
        ("PP712", ".customized_info['entropy'][0]"),
    ]
    assert "single stage float32 (2,) cpu, PP float16 (2,) cpu" in found[0][3]
    assert all(error is None for _, _, error, _ in found)


@pytest.mark.parametrize("version", RELEASES)
def test_sglangs_own_pop_refuses_an_observer_without_from_pp_tensors(version):
    [(code, key, error, message)] = checked(version)["no-from"]["findings"]
    assert key is None
    assert (code, error) == (
        "PP702",
        "sampling observer does not support pipeline-parallel transport",
    )
    assert message.startswith("rank 0's pop raises RuntimeError: sampling observer does not")


CONSUME_READS = """
import json, sys
from ppaux.observer import ObserverOptions, check_observer
out = {}
for transport in ("sglang", "wire"):
    report = check_observer(
        sys.argv[1],
        ObserverOptions(transport=transport, batch_sizes=(2,), steps=2, timeout_s=300),
    )
    out[transport] = {
        "findings": [[f.code, f.message] for f in report.findings],
        "observer": report.data["observer"],
        "notes": report.notes,
    }
print("REPORT " + json.dumps(out))
"""


def test_consume_sees_sglangs_own_requests_on_sglangs_own_path(tmp_path):
    # A consume as real ones are written: it asks req.finished() and reads is_retracted,
    # origin_input_ids, finished_reason and the request's sampling parameters (the stand-in
    # carries them as the release's Req does).
    good = (OBSERVERS / "entropy_good.py").read_text(encoding="utf-8")
    text = good.replace(
        "            if commit is None:\n",
        "            if commit is None or req.finished() or req.is_retracted:\n"
        "                continue\n"
        "            if req.finished_reason is not None or not req.origin_input_ids:\n"
        "                continue\n"
        "            if req.sampling_params.max_new_tokens < len(req.output_ids):\n",
        1,
    )
    assert text != good
    (tmp_path / "reads.py").write_text(text, encoding="utf-8")
    runtime = sglang_runtime.sglang_runtime("0.5.23")
    done = runtime.run(
        ["-c", textwrap.dedent(CONSUME_READS), f"{tmp_path / 'reads.py'}:EntropyObserver"],
        timeout=900,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("REPORT ")), None)
    assert done.returncode == 0 and line, done.stdout[-3000:] + done.stderr[-3000:]
    reports = json.loads(line.removeprefix("REPORT "))
    report = reports["sglang"]
    assert report["findings"] == []
    assert report["observer"]["requests"] == "sglang 0.5.23 Req/ScheduleBatch"
    # a clean check stays quiet (but for the note of the suite's own rank-0 fork hook)
    assert [n for n in report["notes"] if "PPAUX_TEST_RANK0_FORK" not in n] == []
    # Other transports keep to the stand-ins (sglang's import is over their budget), which
    # carry sampling_params too: the same consume is clean there.
    stand_ins = reports["wire"]
    assert stand_ins["observer"]["requests"] == "ppaux stand-ins"
    assert stand_ins["findings"] == []


STANDINS_MATCH = """
import dataclasses, json
from ppaux.observer.requests import sglang_kit, standin_kit
from ppaux.observer.standins import StandInRequest
real = sglang_kit()
assert real is not None, "sglang is importable here"
[req] = real.make(1)
[stand_in] = standin_kit().make(1)
fields = {}
for field in dataclasses.fields(StandInRequest):
    if field.name == "sampling_params":  # compared field by field below
        continue
    mine = getattr(stand_in, field.name)
    theirs = getattr(req, field.name, "<missing>")
    fields[field.name] = [repr(mine), repr(list(theirs) if field.name == "output_ids" else theirs)]
params = {}
for field in dataclasses.fields(type(stand_in.sampling_params)):
    mine = getattr(stand_in.sampling_params, field.name)
    theirs = getattr(req.sampling_params, field.name, "<missing>")
    params[field.name] = [repr(mine), repr(theirs)]
methods = {
    name: [callable(getattr(StandInRequest, name)), callable(getattr(type(req), name, None))]
    for name in ("finished",)
}
batch = real.make_batch([req], "cpu")
print("STANDINS " + json.dumps({
    "fields": fields,
    "params": params,
    "methods": methods,
    "finished": [stand_in.finished(), req.finished()],
    "batch": [type(batch).__name__, batch.reqs == [req], batch.device, batch.batch_size()],
    "forward_mode": [
        standin_kit().make_batch([], "cpu").forward_mode.name, batch.forward_mode.name
    ],
}))
"""


def test_the_stand_in_request_is_the_releases_req_as_a_check_makes_it():
    found = checked(STANDINS_RELEASE, "STANDINS")
    # Every attribute the stand-in carries, the release's Req carries with the same value.
    assert {name: a for name, (a, b) in found["fields"].items()} == {
        name: b for name, (a, b) in found["fields"].items()
    }
    assert {name: a for name, (a, b) in found["params"].items()} == {
        name: b for name, (a, b) in found["params"].items()
    }
    assert {"custom_params", "max_new_tokens", "temperature"} <= set(found["params"])
    assert found["methods"] == {"finished": [True, True]}
    assert found["finished"] == [False, False]
    assert found["batch"] == ["ScheduleBatch", True, "cpu", 1]
    assert found["forward_mode"] == ["DECODE", "DECODE"]


FORWARD_MODES = """
import inspect, json
from sglang.srt.model_executor.forward_batch_info import ForwardMode
from ppaux.observer.standins import forward_modes
found = {}
for name, modes in (("release", ForwardMode), ("stand_in", forward_modes())):
    table = {"members": [[m.name, int(m)] for m in modes]}
    for attr in sorted(vars(ForwardMode)):
        if attr.startswith("is_"):
            method = getattr(ForwardMode, attr)
            table[attr] = [m.name for m in modes if getattr(m, attr)()]
            if "include_draft_extend_v2" in inspect.signature(method).parameters:
                table[attr + "+draft"] = [
                    m.name for m in modes if getattr(m, attr)(include_draft_extend_v2=True)
                ]
    found[name] = table
print("MODES " + json.dumps(found))
"""


def test_the_stand_in_forward_mode_is_the_releases():
    found = checked(STANDINS_RELEASE, "MODES")
    assert found["stand_in"] == found["release"]
    assert len(found["release"]["members"]) == 9


STANDIN_FIELDS = """
import dataclasses, json
from sglang.srt.managers.schedule_batch import ScheduleBatch
from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
from ppaux.observer.requests import sglang_kit
from ppaux.observer.standins import StandInBatch, StandInRequest, StandInSamplingInfo
from ppaux.observer.standins import sampling_info_fields
real = sglang_kit()
names = ("lora_id", "grammar", "multimodal_inputs", "return_sampling_mask")
[req] = real.make(1)
batch = {f.name: f for f in dataclasses.fields(ScheduleBatch)}
info = {f.name: f for f in dataclasses.fields(SamplingBatchInfo)}
made = sampling_info_fields(1, 32, "cpu")
print("FIELDS " + json.dumps({
    "req": {n: repr(getattr(req, n, "<missing>")) for n in names},
    "stand_in": {n: repr(getattr(StandInRequest("req-0"), n)) for n in names},
    "batch_missing": [f.name for f in dataclasses.fields(StandInBatch) if f.name not in batch],
    "batch": {n: repr(batch[n].default) for n in ("return_logprob", "top_logprobs_nums")},
    "info_missing": [
        f.name for f in dataclasses.fields(StandInSamplingInfo) if f.name not in info
    ],
    "rids_int": repr(info["rids_int"].default),
    # SamplingBatchInfo.from_schedule_batch: [r.return_sampling_mask for r in reqs]
    "masks": [repr(made["return_sampling_masks"]), repr([req.return_sampling_mask])],
}))
"""


#: The fields of the stand-in sampling info that one release's ``SamplingBatchInfo`` has and
#: the other's has not (sampling_batch_info.py 0.5.19 l.79; 0.5.23 l.99 - l.124).
OTHER_RELEASES_INFO = {
    "0.5.19": {
        "return_sampling_support_logprobs",
        "sampling_mask_batch_indices",
        "sampling_support_logprobs_capture_indices",
        "sampling_mask_top_ks",
        "watermark_keys",
        "watermark_context_windows",
        "watermark_enabled",
        "watermark_candidates_host",
        "has_watermark_candidates",
        "npu_top_k_top_p_eligible",
        "max_top_k",
    },
    "0.5.23": {"sampling_mask_max_top_k"},
}


@pytest.mark.parametrize("version", RELEASES)
def test_the_stand_ins_carry_the_fields_sglang_always_sets(version):
    done = sglang_runtime.sglang_runtime(version).run(
        ["-c", textwrap.dedent(STANDIN_FIELDS)], timeout=900
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("FIELDS ")), None)
    assert done.returncode == 0 and line, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(line.removeprefix("FIELDS "))
    # Req.__init__: lora_id=None, return_sampling_mask=False; grammar and multimodal_inputs
    # None until a grammar or an image is given.
    assert found["req"] == {
        "lora_id": "None",
        "grammar": "None",
        "multimodal_inputs": "None",
        "return_sampling_mask": "False",
    }
    assert found["stand_in"] == found["req"]
    assert found["batch_missing"] == []
    assert found["batch"] == {"return_logprob": "False", "top_logprobs_nums": "None"}
    # The stand-in carries the union of the two releases' fields: those of the other one
    # alone are the only ones this release lacks.
    assert set(found["info_missing"]) == OTHER_RELEASES_INFO[version]
    assert found["rids_int"] == "None"
    assert found["masks"][0] == found["masks"][1] == "[False]"


RELEASE_DEFAULTS = """
import dataclasses, json
from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
from ppaux.observer.requests import sglang_kit
from ppaux.observer.standins import StandInRequest, StandInSamplingInfo
[req] = sglang_kit().make(1)
stand_in = StandInRequest("req-0")
missing, unequal = [], {}
for name, value in vars(req).items():
    plain = value is None or type(value) in (bool, int, float, str)
    if name.startswith("_") or not (plain or (type(value) in (list, dict) and not value)):
        continue
    if not hasattr(stand_in, name):
        missing.append(name)
    elif type(getattr(stand_in, name)) is not type(value) or getattr(stand_in, name) != value:
        unequal[name] = [repr(getattr(stand_in, name)), repr(value)]
ours = {f.name for f in dataclasses.fields(StandInSamplingInfo)}
print("DEFAULTS " + json.dumps({
    "missing": missing,
    "unequal": unequal,
    "info_missing": [f.name for f in dataclasses.fields(SamplingBatchInfo) if f.name not in ours],
    "read": [repr(getattr(req, n)) for n in ("return_hidden_states", "spec_verify_ct")],
}))
"""


@pytest.mark.parametrize("version", RELEASES)
def test_the_stand_ins_carry_every_plain_default_of_the_releases_classes(version):
    # Every public attribute a fresh Req holds as a plain value (or a new empty list or
    # dict), the stand-in request holds, equal and of the same type; every field of the
    # release's SamplingBatchInfo is a field of the stand-in's. A release that adds one
    # fails here until ppaux/data/request_defaults.json (or the stand-in) carries it.
    done = sglang_runtime.sglang_runtime(version).run(
        ["-c", textwrap.dedent(RELEASE_DEFAULTS)], timeout=900
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("DEFAULTS ")), None)
    assert done.returncode == 0 and line, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(line.removeprefix("DEFAULTS "))
    assert found["read"] == ["False", "0"]
    assert found["missing"] == []
    assert found["unequal"] == {}
    assert found["info_missing"] == []
