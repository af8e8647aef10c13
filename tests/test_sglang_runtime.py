"""sglang's own pipeline-parallel output path, run on CPU between processes over gloo.

Each release's runtime (the unpacked release wheel plus the third-party packages its imports
need, see ``tests/sglang_runtime.py``) runs ``tests/sglang_runtime_driver.py``, which calls
sglang's real ``GroupCoordinator.send_tensor_dict`` / ``recv_tensor_dict`` and the real
``SchedulerPPMixin`` methods and reports what happened as JSON. Every expectation below is
written out by hand, from reading each release's code; nothing here is computed with sglang or
with ppaux.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sglang_runtime

pytestmark = pytest.mark.sglang_runtime

RELEASES = ["0.5.19", "0.5.23"]
#: The scheduler test also runs 0.5.20 - 0.5.22 with PPAUX_RUNTIME_ALL_RELEASES=1 (three more
#: runtimes to prepare: about a minute each, plus about 30 s each for the run, on 2 cores).
SCHEDULER_RELEASES = (
    ["0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]
    if os.environ.get("PPAUX_RUNTIME_ALL_RELEASES") == "1"
    else RELEASES
)
DRIVER = Path(__file__).with_name("sglang_runtime_driver.py")
AUX = "__sampling_observer_output__.scores"
BARE = "__sampling_observer_output__."
NON_TENSOR_ERROR = "received a non-tensor auxiliary PP output"


def tensor(dtype, shape, values, *, contiguous=True):
    return {
        "kind": "tensor",
        "dtype": dtype,
        "shape": shape,
        "device": "cpu",
        "contiguous": contiguous,
        "values": values,
    }


def obj(type_name, value, representation):
    return {"kind": "object", "type": type_name, "value": value, "repr": representation}


_reports: dict = {}


def run_driver(version, *args, stdin=None, expect_rc=0, fresh=False):
    """The driver's report (each distinct run made once per test run: starting sglang is slow).
    Forked from the release's zygote (``tests/runtime_zygote.py``) unless ``fresh``."""
    key = (version, args, stdin, expect_rc, fresh)
    if key not in _reports:
        _reports[key] = _run_driver(version, *args, stdin=stdin, expect_rc=expect_rc, fresh=fresh)
    return _reports[key]


def _run_driver(version, *args, stdin=None, expect_rc=0, fresh=False):
    runtime = sglang_runtime.sglang_runtime(version)
    done = runtime.run([str(DRIVER), *args], input=stdin, timeout=600, fresh=fresh)
    assert done.returncode == expect_rc, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    # The code that ran is the release's own, from the unpacked wheel.
    assert report["sglang_version"] == version
    for module, path in report["files"].items():
        assert Path(path).is_relative_to(runtime.sglang_dir), (module, path)
        assert path.endswith(module.replace(".", "/") + ".py")
    # torch is the test interpreter's own, never one installed into the runtime; the only
    # stand-in imported is torchvision.
    assert not Path(report["torch"]["file"]).is_relative_to(runtime.root)
    assert report["standins"] == ["torchvision"]
    return report


# ----------------------------------------------------------------------------- the wire

MESSAGES = [
    [
        ["next_token_ids", {"tensor": {"dtype": "int64", "values": [11, 12, 13]}}],
        [
            "logits",
            {
                "tensor": {
                    "dtype": "bfloat16",
                    "values": [0.5, 1.5, 2.5, 3.5, 4.5, 5.5],
                    "shape": [2, 3],
                }
            },
        ],
        [AUX, {"object": [0.25, 0.5]}],
        ["empty", {"tensor": {"dtype": "float32", "values": [], "shape": [0, 4]}}],
        ["scalar", {"tensor": {"dtype": "float64", "values": 2.5}}],
        ["mask", {"tensor": {"dtype": "bool", "values": [True, False]}}],
        ["meta", {"object": {"a": {"tuple": [1, "x"]}, "b": None}}],
        ["count", {"object": 7}],
    ],
    [
        [BARE, {"tensor": {"dtype": "int8", "values": [-1, 2]}}],
        [AUX, {"tensor": {"dtype": "float16", "values": [0.5, 0.25]}}],
        ["none", {"object": None}],
    ],
]

RECEIVED = [
    [
        ["next_token_ids", tensor("int64", [3], [11, 12, 13])],
        ["logits", tensor("bfloat16", [2, 3], [[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]])],
        # A non-tensor rides in the pickled metadata and arrives as the same Python object.
        [AUX, obj("builtins.list", [0.25, 0.5], "[0.25, 0.5]")],
        ["empty", tensor("float32", [0, 4], [])],
        ["scalar", tensor("float64", [], 2.5)],
        ["mask", tensor("bool", [2], [True, False])],
        ["meta", obj("builtins.dict", {"a": [1, "x"], "b": None}, "{'a': (1, 'x'), 'b': None}")],
        ["count", obj("builtins.int", 7, "7")],
    ],
    [
        [BARE, tensor("int8", [2], [-1, 2])],
        [AUX, tensor("float16", [2], [0.5, 0.25])],
        ["none", obj("builtins.NoneType", None, "None")],
    ],
]


#: Sent last: without an all-gather group gloo refuses a non-contiguous tensor on the sender,
#: after the metadata went out, so the run stops there (the driver's status 3 on the sender).
NON_CONTIGUOUS = [
    ["next_token_ids", {"tensor": {"dtype": "int64", "values": [1, 2]}}],
    [
        "mat",
        {
            "tensor": {
                "dtype": "float32",
                "values": [1, 2, 3, 4, 5, 6],
                "shape": [2, 3],
                "transpose": True,
            }
        },
    ],
]


def transport_report(version):
    """The transport run, in a fresh interpreter: the bytecode test reads what its imports
    compiled (a forked process imports nothing of sglang's itself)."""
    return run_driver(
        version,
        "transport",
        "-",
        stdin=json.dumps({"messages": [*MESSAGES, NON_CONTIGUOUS]}),
        expect_rc=1,
        fresh=True,
    )


@pytest.mark.parametrize("version", RELEASES)
def test_send_recv_tensor_dict_delivers_every_value(version):
    report = transport_report(version)
    first, last = report["ranks"]["0"], report["ranks"]["1"]
    assert (first["is_first_rank"], last["is_last_rank"]) == (True, True)
    assert [m["received"] for m in first["messages"][: len(MESSAGES)]] == RECEIVED
    assert all("error" not in m for m in last["messages"][: len(MESSAGES)])


@pytest.mark.parametrize("version", RELEASES)
def test_non_contiguous_tensor_fails_on_the_sender(version):
    report = transport_report(version)
    sender, receiver = report["ranks"]["1"], report["ranks"]["0"]
    assert sender["rc"] == 3  # the driver's "sender failed" status
    assert len(sender["messages"]) == len(MESSAGES) + 1
    entry = sender["messages"][-1]
    assert entry["error"]["type"] == "RuntimeError"
    assert "input tensor has to be contiguous" in entry["error"]["message"]
    # The receiver had the metadata and was waiting for a tensor that never came when the
    # sender's process ended: it sees the peer close the connection. gloo words that as a
    # close or as a reset, depending on whether the sender's socket had unread bytes when its
    # process ended (both seen on this test's runs).
    assert receiver["rc"] == 1
    assert len(receiver["messages"]) == len(MESSAGES)
    assert receiver["crash"]["type"] == "RuntimeError"
    message = receiver["crash"]["message"]
    assert "Connection closed by peer" in message or "Connection reset by peer" in message


@pytest.mark.parametrize("version", RELEASES)
def test_attention_tp_all_gather_with_real_groups(version):
    # Four processes: PP groups [0, 2] and [1, 3], attention-TP groups [0, 1] and [2, 3].
    # Ranks 2 and 3 (last stage) each send one half of every tensor whose size divides by 2;
    # ranks 0 and 1 receive a half each and all-gather them. "per_rank" adds the sender's rank.
    message = [
        [
            "next_token_ids",
            {"tensor": {"dtype": "int64", "values": [10, 20, 30, 40], "per_rank": True}},
        ],
        ["odd", {"tensor": {"dtype": "float32", "values": [1, 2, 3], "per_rank": True}}],
        [
            "mat",
            {
                "tensor": {
                    "dtype": "float32",
                    "values": [1, 2, 3, 4, 5, 6],
                    "shape": [2, 3],
                    "transpose": True,
                }
            },
        ],
        [AUX, {"object": [0.25, 0.5]}],
    ]
    report = run_driver(version, "transport", "-", "--all-gather", "2", stdin=json.dumps(message))
    ranks = report["ranks"]
    assert report["world_size"] == 4
    assert [ranks[r]["attn_tp_world_size"] for r in "0123"] == [2, 2, 2, 2]
    (zero,), (one,) = ranks["0"]["messages"], ranks["1"]["messages"]
    # Half from rank 2 ([12, 22]) and half from rank 3 ([33, 43]): silently mixed.
    assert zero["received"][0] == ["next_token_ids", tensor("int64", [4], [12, 22, 33, 43])]
    assert one["received"][0] == zero["received"][0]
    # Size 3 does not divide by 2: sent whole, each receiver gets its own peer's tensor.
    assert zero["received"][1] == ["odd", tensor("float32", [3], [3.0, 4.0, 5.0])]
    assert one["received"][1] == ["odd", tensor("float32", [3], [4.0, 5.0, 6.0])]
    # The non-contiguous view is sliced into contiguous parts: it arrives, contiguous.
    mat = ["mat", tensor("float32", [3, 2], [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])]
    assert zero["received"][2] == mat and one["received"][2] == mat
    aux = [AUX, obj("builtins.list", [0.25, 0.5], "[0.25, 0.5]")]
    assert zero["received"][3] == aux and one["received"][3] == aux


# ----------------------------------------------------------------------------- the scheduler

SCORES = tensor("float32", [3], [0.25, 0.5, 0.75])
OUTPUT_TYPE = obj("builtins.str", "output", "'output'")

#: What the real methods read from the stand-in scheduler, per release and per stage.
READS = {
    "0.5.19": {
        "last": {
            "scheduler": ["pp_group", "require_attn_tp_allgather"],
            "batch": ["return_logprob"],
        },
        "first": {
            "scheduler": [
                "require_attn_tp_allgather",
                "_pp_tensor_dict_inbox",
                "pp_group",
                "tp_worker",
                "future_map",
            ],
            "batch": ["return_logprob", "req_pool_indices"],
        },
    },
    "0.5.20": {
        "last": {"scheduler": ["pp_group", "attn_tp_group"], "batch": ["return_logprob"]},
        "first": {
            "scheduler": [
                "attn_tp_group",
                "_pp_tensor_dict_inbox",
                "pp_group",
                "tp_worker",
                "future_map",
            ],
            "batch": ["return_logprob", "req_pool_indices"],
        },
    },
    "0.5.23": {
        "last": {
            "scheduler": ["_pp_spec_relay", "pp_comm_stream_ctx", "pp_group", "attn_tp_group"],
            "batch": ["return_logprob"],
        },
        "first": {
            "scheduler": [
                "attn_tp_group",
                "_pp_tensor_dict_inbox",
                "pp_comm_stream_ctx",
                "pp_group",
                "pp_comm_stream",
                "tp_worker",
                "_pp_spec_relay",
                "future_map",
            ],
            "batch": ["return_logprob", "spec_algorithm", "req_pool_indices"],
        },
    },
}
READS["0.5.21"] = READS["0.5.22"] = READS["0.5.23"]


@pytest.mark.parametrize("version", SCHEDULER_RELEASES)
def test_scheduler_methods_pop_on_rank_0(version):
    report = run_driver(version, "scheduler", "list", "tensor", "oot-tensor", "none")
    first = {c["case"]: c for c in report["ranks"]["0"]["cases"]}
    last = {c["case"]: c for c in report["ranks"]["1"]["cases"]}

    # A Python list written under the auxiliary key by the out-of-tree line: it crosses the
    # real wire as a list, and rank 0's real pop refuses it, leaving the dict as it was.
    case = first["list"]
    assert case["error"] == {"type": "RuntimeError", "message": NON_TENSOR_ERROR}
    assert case["received"] == [
        ["next_token_ids", tensor("int32", [3], [11, 12, 13])],
        [AUX, obj("builtins.list", [0.25, 0.5, 0.75], "[0.25, 0.5, 0.75]")],
        ["__msg_type__", OUTPUT_TYPE],
    ]
    assert case["keys_after"] == ["next_token_ids", AUX, "__msg_type__"]
    assert case["observer_calls"] == []
    assert last["list"]["sent"] == [
        *case["received"][:1],
        [AUX, obj("builtins.list", [0.25, 0.5, 0.75], "[0.25, 0.5, 0.75]")],
        ["__msg_type__", OUTPUT_TYPE],
    ]

    # A tensor, added by sglang's own add_... (observer output) or by the out-of-tree line:
    # popped cleanly, handed to the observer, copied to the host result.
    for name in ("tensor", "oot-tensor"):
        case = first[name]
        assert "error" not in case, case.get("error")
        assert case["received"][1] == [AUX, SCORES]
        assert case["keys_after"] == ["next_token_ids", "__msg_type__"]
        assert case["observer_calls"] == [["scores"]]
        assert case["pop"] == {
            "auxiliary_host_output": SCORES,
            # returned as received (int32); the relay stash gets the int64 copy
            "next_token_ids": tensor("int32", [3], [11, 12, 13]),
            "stashed_bonus_tokens": [tensor("int64", [3], [11, 12, 13])],
            "batch_input_ids": obj("builtins.NoneType", None, "None"),
        }
        assert last[name]["prepared"] == [
            ["next_token_ids", tensor("int32", [3], [11, 12, 13])],
            [AUX, SCORES],
        ]

    # No auxiliary output at all: nothing to pop, no error.
    case = first["none"]
    assert case["pop"]["auxiliary_host_output"] is None
    assert case["keys_after"] == ["next_token_ids", "__msg_type__"]
    assert case["observer_calls"] == []

    # The stand-in holds what the methods read; these are the reads, per release.
    for stage, cases in (("last", last), ("first", first)):
        accesses = cases["tensor"]["accesses"]
        assert accesses["scheduler"]["read"] == READS[version][stage]["scheduler"], stage
        assert accesses["batch"]["read"] == READS[version][stage]["batch"], stage
        assert accesses["scheduler"]["written"] == []
    assert first["tensor"]["accesses"]["model_runner"]["read"] == ["sampling_observer"]
    assert first["tensor"]["accesses"]["batch"]["written"] == ["input_ids"]


@pytest.mark.parametrize("version", RELEASES)
def test_the_runtime_imports_from_bytecode_as_a_pip_install_does(version):
    """The preparation compiles the runtime, as pip compiles what it installs: the driver's
    processes import sglang's runtime from ``.pyc`` files and compile no module of it from
    source (the driver records each file its loader compiles)."""
    import importlib.util

    runtime = sglang_runtime.sglang_runtime(version)
    report = transport_report(version)
    source = runtime.sglang_dir / "sglang" / "srt" / "distributed" / "parallel_state.py"
    assert report["cached"] == importlib.util.cache_from_source(str(source))
    assert Path(report["cached"]).is_file()
    assert report["compiled"] is not None
    assert [path for path in report["compiled"] if path.startswith(str(runtime.root))] == []
