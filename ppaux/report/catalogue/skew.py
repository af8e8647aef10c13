"""Rules about differences between pipeline stages, and about one stage's sglang (codes PP3xx)."""

from __future__ import annotations

from ppaux.report.findings import Rule, Severity
from ppaux.sglang.messages import POP_NON_TENSOR

__all__ = ["RULES"]

_NON_TENSOR = POP_NON_TENSOR.text

RULES = (
    Rule(
        code="PP301",
        name="sglang-version-differs",
        severity=Severity.ERROR,
        summary="Stages run different sglang releases (or one has none).",
        explanation=(
            "The last stage builds the output message and the first stage reads it, each with "
            "its own sglang. Nothing on the wire says which release wrote a message, so keys, "
            "prefixes and message layout must agree by construction: every stage must run the "
            "same build."
        ),
        causes=(
            "A rolling upgrade that reached only some hosts.",
            "Different container images or virtual environments on different hosts.",
        ),
        fix="Install the same sglang release on every stage (pip install sglang==X everywhere) "
        "and restart the whole deployment.",
        example="0.5.19 on pp3, 0.5.23 on pp0-pp2",
        area="skew",
    ),
    Rule(
        code="PP302",
        name="transport-missing",
        severity=Severity.ERROR,
        summary="A stage lacks the auxiliary transport that another stage has.",
        explanation=(
            "sglang 0.5.18 and earlier have no auxiliary PP transport. A last stage without it "
            "never sends the observer's output; a first stage without it never pops it, so the "
            "'__sampling_observer_output__.*' keys stay in the dict as ordinary entries. Either "
            "way the sampling observer's output is lost, silently."
        ),
        causes=("One stage still runs sglang 0.5.18 or older.",),
        fix="Run sglang 0.5.19 or newer on every stage (the same release everywhere).",
        example="pp3 has no srt/sampling/sampling_observer_pp.py",
        area="skew",
    ),
    Rule(
        code="PP303",
        name="sender-unvalidated",
        severity=Severity.ERROR,
        summary="A sending stage's add does not refuse bad names, non-tensors or duplicates.",
        explanation=(
            "Every release with the transport refuses, on the last stage, a value that is not a "
            "tensor, an empty or non-string name, and a duplicate key. A build whose add does "
            "not lets a bad value travel inside the pickled metadata; the first stage then "
            f"fails with '{_NON_TENSOR}', far from the cause."
        ),
        causes=(
            "A modified or non-release sglang build on the last stage.",
            "A patch that removed the checks from add_auxiliary_output_to_pp_tensors.",
        ),
        fix="Run a release sglang (0.5.19+) on the last stage, or restore the checks in "
        "add_auxiliary_output_to_pp_tensors.",
        sglang_error=_NON_TENSOR,
        example="add lacks the torch.is_tensor check",
        area="skew",
    ),
    Rule(
        code="PP304",
        name="transport-modified",
        severity=Severity.WARNING,
        summary="The transport's add or pop is not a known release's.",
        explanation=(
            "The functions were compared, as syntax trees, with those of every release in "
            "ppaux's table and match none: the build is patched, a fork, or newer than the "
            "table. Its checks were read from the code and are shown, but its behaviour may "
            "differ from a release's in ways ppaux does not know."
        ),
        causes=(
            "A locally patched sglang, a fork, or a nightly build.",
            "A release newer than this ppaux (upgrade ppaux to learn it).",
        ),
        fix="Run a release build on every stage, or check the diff of sampling_observer_pp.py "
        "against the release it claims to be.",
        sglang_error=_NON_TENSOR,
        example="add_auxiliary_output_to_pp_tensors differs from 0.5.19-0.5.23",
        area="skew",
    ),
    Rule(
        code="PP305",
        name="receiver-unvalidated",
        severity=Severity.WARNING,
        summary="A receiving stage's pop hands non-tensor values to the observer unchecked.",
        explanation=(
            "Release builds refuse a non-tensor auxiliary value on the first stage. A pop "
            "without that check passes whatever arrived to the observer's from_pp_tensors, "
            "which then fails in its own way or computes with a Python object."
        ),
        causes=("A modified sglang build on the first stage.",),
        fix="Run a release sglang (0.5.19+) on the first stage.",
        example="pop lacks the torch.is_tensor check on pp0",
        area="skew",
    ),
    Rule(
        code="PP306",
        name="prefix-differs",
        severity=Severity.ERROR,
        summary="Stages use different auxiliary key prefixes.",
        explanation=(
            "The receiver collects only keys that start with its own prefix. Keys the sender "
            "wrote under another prefix are not popped: the observer gets nothing and the keys "
            "travel on as ordinary entries of the message."
        ),
        causes=("A build that changed _OUTPUT_PREFIX on some stages.",),
        fix="Use the same sglang build on every stage; release builds all use "
        "'__sampling_observer_output__.'.",
        example="'__aux__.' on pp3, '__sampling_observer_output__.' on pp0",
        area="skew",
    ),
    Rule(
        code="PP307",
        name="logprob-keys-differ",
        severity=Severity.ERROR,
        summary="A stage indexes a logprob key that the last stage does not send.",
        explanation=(
            "On batches that request logprobs (0.5.20+: or a sampling mask) the last stage puts "
            "its release's logprob keys in the output message; the first stage receives it, "
            "pops the auxiliary keys and forwards it along the pipeline, and every stage but "
            "the last indexes its own release's keys in it. 0.5.20 replaced "
            "next_token_sampling_mask_idx and "
            "next_token_sampling_logprobs with sampling_mask_* keys, 0.5.21 and 0.5.22 added "
            "more, so mixed releases fail with KeyError on exactly those batches."
        ),
        causes=("Mixed sglang releases between the last and the first stage.",),
        fix="Run the same sglang release on every stage.",
        example="KeyError: 'sampling_mask_token_ids' with a 0.5.19 last stage and 0.5.23 first",
        area="skew",
    ),
    Rule(
        code="PP308",
        name="wire-differs",
        severity=Severity.ERROR,
        summary="Stages send and receive tensor dicts with different code.",
        explanation=(
            "_split_tensor_dict, send_tensor_dict and recv_tensor_dict (parallel_state.py) "
            "define the wire: a pickled list of keys and tensor metadata, then each tensor. "
            "They are the same in every release from 0.5.18 to 0.5.23; stages whose copies "
            "differ may disagree on the order or number of messages and hang or mis-assign "
            "tensors."
        ),
        causes=("A patched parallel_state.py on some stages.",),
        fix="Use the same sglang build, unpatched, on every stage.",
        example="_split_tensor_dict on pp1 differs from 0.5.19-0.5.23",
        area="skew",
    ),
    Rule(
        code="PP309",
        name="torch-differs",
        severity=Severity.ERROR,
        summary="Stages run different torch versions.",
        explanation=(
            "Tensor metadata is pickled by one torch and unpickled by another, and the "
            "collectives must agree. A different major.minor is an error; a different patch "
            "release or local build (+cu128 against +cu130) is a warning. sglang pins torch "
            "exactly (0.5.18-0.5.21: 2.13.0, 0.5.22-0.5.23: 2.14.1)."
        ),
        causes=("Hosts installed at different times, or with different CUDA wheel indexes.",),
        fix="Install the same torch build on every stage (the one your sglang release pins).",
        example="2.13.0+cu128 on pp0, 2.14.1+cu128 on pp1",
        area="skew",
    ),
    Rule(
        code="PP310",
        name="nccl-differs",
        severity=Severity.ERROR,
        summary="Stages use different NCCL versions.",
        explanation=(
            "CUDA tensors between stages travel over NCCL. Peers with different NCCL versions "
            "can hang or fail at the first collective (NVIDIA/nccl#354)."
        ),
        causes=("Different nvidia-nccl-* wheels, or a system NCCL on some hosts.",),
        fix="Install the same nvidia-nccl-cu* version everywhere (the one torch pins).",
        example="NCCL 2.26.2 on pp0, 2.27.3 on pp1",
        area="skew",
    ),
    Rule(
        code="PP311",
        name="cuda-differs",
        severity=Severity.ERROR,
        summary="Stages run torch builds for different CUDA versions.",
        explanation=(
            "torch's CUDA build decides the runtime, the NCCL build and the kernels used. A "
            "different major.minor is an error, a different patch a warning."
        ),
        causes=("torch installed from different wheel indexes (cu126, cu128, cu130).",),
        fix="Install torch from the same CUDA index on every host.",
        example="torch built for CUDA 12.8 on pp0, 12.6 on pp1",
        area="skew",
    ),
    Rule(
        code="PP312",
        name="driver-differs",
        severity=Severity.WARNING,
        summary="Hosts run different NVIDIA driver versions.",
        explanation="Drivers rarely break PP on their own, but mismatched drivers are a common "
        "factor in NCCL hangs across nodes, and a driver older than the CUDA runtime needs "
        "fails outright.",
        causes=("Hosts provisioned at different times.",),
        fix="Align the driver version across hosts.",
        example="driver 570.86.15 on node-a, 575.51.03 on node-b",
        area="skew",
    ),
    Rule(
        code="PP313",
        name="python-differs",
        severity=Severity.WARNING,
        summary="Stages run different Python minor versions.",
        explanation="The metadata crosses stages as a pickle; different Python minors usually "
        "read each other's pickles, but they imply different wheels of everything else.",
        causes=("Different base images or virtual environments.",),
        fix="Use the same Python minor version on every stage.",
        example="Python 3.11 on pp0, 3.12 on pp1",
        area="skew",
    ),
    Rule(
        code="PP314",
        name="pp-env-differs",
        severity=Severity.ERROR,
        summary="An environment variable that both ends of a PP link must agree on differs.",
        explanation=(
            "Some switches change whether a message is sent at all. With "
            "SGLANG_PP_SKIP_PURE_CHUNKED_OUTPUT_COMM set on one stage and not on another, one "
            "side skips an output send the other waits for, and the pipeline hangs; "
            "SGLANG_ENABLE_PP_SPEC changes which keys the output message carries."
        ),
        causes=("The variable was exported in one host's launcher script only.",),
        fix="Set the variable to the same value on every stage (unset counts as its default).",
        example="SGLANG_PP_SKIP_PURE_CHUNKED_OUTPUT_COMM=1 on pp0, unset on pp1",
        area="skew",
    ),
    Rule(
        code="PP315",
        name="env-differs",
        severity=Severity.INFO,
        summary="A PP-related environment variable differs between stages.",
        explanation="SGLANG_*, NCCL_*, TORCH_* and similar variables tune communication; a "
        "difference is worth knowing about when stages misbehave.",
        causes=("Per-host launcher scripts.",),
        fix="Align the variable unless the difference is intended (for example a NIC name).",
        example="NCCL_DEBUG=INFO on pp0, unset on pp1",
        area="skew",
    ),
    Rule(
        code="PP316",
        name="rank-duplicated",
        severity=Severity.ERROR,
        summary="Two fingerprints claim the same rank.",
        explanation="Each rank should appear once; a duplicate means two processes think they "
        "are the same stage, or a fingerprint file was copied.",
        causes=("A stale fingerprint file among new ones.", "A launcher that reused RANK."),
        fix="Take one fingerprint per rank, fresh, and compare those.",
        example="rank 1 in stage1.json and in stage1-copy.json",
        area="skew",
    ),
    Rule(
        code="PP317",
        name="rank-missing",
        severity=Severity.ERROR,
        summary="A rank that should be there sent no fingerprint.",
        explanation="The declared world or pipeline size says more ranks exist than "
        "fingerprints arrived, so the comparison is incomplete; in distributed mode the rank "
        "did not answer within the timeout (not started, hung, or dead).",
        causes=("A rank that crashed or never started.", "A missing fingerprint file."),
        fix="Start or fix the missing rank and run the check again.",
        example="--pp-size 4, fingerprints of ranks 0, 1 and 3 only",
        area="skew",
    ),
    Rule(
        code="PP318",
        name="fingerprint-version-differs",
        severity=Severity.WARNING,
        summary="Fingerprints were taken by different ppaux versions.",
        explanation="Facts added in a newer ppaux are compared only where every fingerprint "
        "has them, and verdicts may differ between versions.",
        causes=("ppaux upgraded on some hosts only.",),
        fix="Take every fingerprint with the same ppaux version.",
        example="ppaux 0.1.0 on pp0, 0.2.0 on pp1",
        area="skew",
    ),
    Rule(
        code="PP319",
        name="capability-unknown",
        severity=Severity.WARNING,
        summary="A stage's transport capability could not be read.",
        explanation="sglang was not found, or one of the files ppaux reads is missing, "
        "unreadable or not valid Python, or binds add or pop again after defining (or "
        "importing) them, so a call may not reach the code ppaux reads: what that stage's "
        "transport does is unknown.",
        causes=(
            "sglang not installed in the Python environment that took the fingerprint.",
            "A damaged installation.",
            "A patched build that replaces add or pop after their definition.",
        ),
        fix="Take the fingerprint in the environment the server runs in, or pass "
        "--sglang-path; reinstall sglang if a file is damaged.",
        example="pp1: sglang is not installed in this Python environment",
        area="skew",
        inconclusive=True,
    ),
    Rule(
        code="PP325",
        name="sglang-source-invalid",
        severity=Severity.ERROR,
        summary="A file of a stage's sglang is not valid Python: that sglang cannot import it.",
        explanation=(
            "One of the files ppaux reads (the transport, the scheduler's PP mixin, the "
            "manager utilities, the distributed state) is refused by CPython's parser, with the "
            "message and line it gives. The module cannot be imported, so that stage's server "
            "cannot start or fails when it first needs the module; nothing it would send or "
            "receive can be compared."
        ),
        causes=(
            "A file edited in place on the host (a local patch left half-done).",
            "A damaged installation (a disk or copy error, an interrupted upgrade).",
        ),
        fix="Reinstall the stage's sglang (pip install --force-reinstall sglang==VERSION), or "
        "finish the local patch, then take the fingerprint again.",
        example="pp1: sglang/srt/distributed/parallel_state.py: not valid Python: '(' was never "
        "closed (line 3563)",
        area="skew",
    ),
    Rule(
        code="PP320",
        name="live-patched",
        severity=Severity.ERROR,
        summary="In the running process, add or pop is not the function its file defines.",
        explanation=(
            "The files on disk are what they should be, but the process runs other code: the "
            "function was replaced, wrapped, or its file changed after import. A replaced add "
            f"that lets non-tensors through is the likeliest cause of '{_NON_TENSOR}'."
        ),
        causes=(
            "A plugin or debugging hook that monkeypatches the transport.",
            "sglang upgraded in place while the server kept running.",
        ),
        fix="Remove the patch (or restart after an upgrade) and take the fingerprint again.",
        sglang_error=_NON_TENSOR,
        example="add_auxiliary_output_to_pp_tensors replaced by a wrapper in the running process",
        area="skew",
    ),
    Rule(
        code="PP321",
        name="release-key-missing",
        severity=Severity.ERROR,
        summary="The message lacks a key that the chosen release's first stage indexes.",
        explanation="Checked against ppaux's table of releases: the first stage indexes "
        "next_token_ids on every output message and its logprob keys on logprob batches, so "
        "a message without one fails there with KeyError.",
        causes=("The last stage runs another sglang release than the first.",),
        fix="Run the same sglang release on the first and the last stage.",
        example="KeyError: 'sampling_mask_token_ids'",
        area="skew",
    ),
    Rule(
        code="PP322",
        name="release-key-foreign",
        severity=Severity.WARNING,
        summary="The message carries a logprob key that the chosen release never sends.",
        explanation="The key belongs to another release's output message, so the stage that "
        "wrote the message runs another release.",
        causes=("Mixed sglang releases between stages.",),
        fix="Run the same sglang release on every stage.",
        example="'next_token_sampling_mask_idx' (0.5.18-0.5.19) checked against 0.5.23",
        area="skew",
    ),
    Rule(
        code="PP323",
        name="transport-unused",
        severity=Severity.WARNING,
        summary="The transport exists but the scheduler does not call add or pop.",
        explanation="The functions are there, but scheduler_pp_mixin.py never calls them, so "
        "this stage neither sends nor receives auxiliary output.",
        causes=("A modified scheduler.",),
        fix="Use a release build of sglang.",
        example="scheduler_pp_mixin.py never calls pop_auxiliary_output_from_pp_tensors",
        area="skew",
    ),
    Rule(
        code="PP324",
        name="package-differs",
        severity=Severity.WARNING,
        summary="A package that the PP path uses differs between stages.",
        explanation="sglang-kernel, flashinfer, triton and transformers versions shape the "
        "model each stage runs; stages of one deployment should run the same ones.",
        causes=("Hosts installed at different times.",),
        fix="Install the same versions everywhere (a lock file or one image).",
        example="flashinfer-python 0.2.5 on pp0, 0.2.6 on pp1",
        area="skew",
    ),
)
