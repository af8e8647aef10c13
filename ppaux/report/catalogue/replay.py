"""Rules about what happened when a payload was replayed with real tensors (codes PP4xx)."""

from __future__ import annotations

from ppaux.report.findings import Rule, Severity
from ppaux.sglang.messages import ADD_BAD_NAME, ADD_NOT_TENSOR, POP_NON_TENSOR

__all__ = ["RULES"]

RULES = (
    Rule(
        code="PP401",
        name="replay-pop-error",
        severity=Severity.ERROR,
        summary="Replayed on rank 0, pop raises an error.",
        explanation=(
            "The payload was rebuilt with torch, sent the way the chosen sender and transport "
            "send it, and handed to pop_auxiliary_output_from_pp_tensors with a PP-capable "
            "observer, as rank 0 does. Pop raised; the message is sglang's, verbatim. With "
            "--impl sglang it came from the installed sglang's own module."
        ),
        causes=(
            "A non-tensor under an auxiliary key (see PP101): it rides inside the pickled "
            "metadata and reaches rank 0 as the same Python object.",
            "A key that is not a string (see PP103): pop calls startswith on every key.",
        ),
        fix="Fix what the message names: see 'ppaux inspect' on the same dump for the entry at "
        "fault and the catalogue entry for its cause.",
        example=f"pop on rank 0 raises RuntimeError: {POP_NON_TENSOR.text}",
        area="replay",
    ),
    Rule(
        code="PP402",
        name="replay-sender-refused",
        severity=Severity.ERROR,
        summary="A validating sender refuses this auxiliary output: add raises.",
        explanation=(
            "With --sender validating (the default), the auxiliary values are added with "
            "add_auxiliary_output_to_pp_tensors, as every sglang release from 0.5.19 does on the "
            "last stage. It raised, so a stock last stage would have failed there and rank 0 "
            "would never have received this dict. If rank 0 did receive it, the last stage did "
            "not validate."
        ),
        causes=(
            "The auxiliary output holds a value that is not a tensor, an empty or non-string "
            "name, or a name already in the dict.",
            "When the dict was captured on rank 0: the last stage runs a patched, modified or "
            "out-of-tree sender that writes the keys without add.",
        ),
        fix="Make to_pp_tensors() return a non-empty mapping of non-empty string names to "
        "tensors. To see what rank 0 makes of the same dict, replay it with a sender that does "
        "not validate.",
        example=f"add raises RuntimeError: {ADD_NOT_TENSOR.format('scores')}",
        area="replay",
    ),
    Rule(
        code="PP403",
        name="replay-wire-failed",
        severity=Severity.ERROR,
        summary="The dict cannot cross sglang's PP wire.",
        explanation=(
            "send_tensor_dict pickles the metadata list, then sends each tensor on its own: CPU "
            "tensors over gloo, which refuses non-contiguous ones after the metadata has gone "
            "out; CUDA tensors over NCCL. torch's dispatcher refuses sparse and quantized "
            "tensors on either (NotImplementedError from c10d::send). A nested tensor has no "
            "size() and fails before anything is sent."
        ),
        causes=(
            "A non-contiguous auxiliary tensor sent without an attention-TP group "
            "(--all-gather 0), or a strided view that the group's reshape keeps (see PP106).",
            "A sparse, quantized or nested tensor in the dict (see PP107).",
        ),
        fix="Call .contiguous() (.to_dense() for sparse tensors, .dequantize() for quantized "
        "ones) on every tensor before it goes into the dict; never send nested tensors.",
        example="the wire fails on the sender: RuntimeError: input tensor has to be contiguous",
        area="replay",
    ),
    Rule(
        code="PP404",
        name="replay-readd-failed",
        severity=Severity.ERROR,
        summary="The output rank 0 rebuilt cannot be sent again: add raises.",
        explanation=(
            "After pop, the reference observer's output was added into a fresh dict with add, "
            "the way the output would travel again. Pop accepts entries that add refuses (a "
            "bare prefix key reaches the observer under the empty name ''), so such an output "
            "cannot make the trip twice."
        ),
        causes=("A key equal to the bare prefix '__sampling_observer_output__.' (see PP102).",),
        fix="Give every auxiliary tensor a non-empty name and add it with "
        "add_auxiliary_output_to_pp_tensors.",
        example=f"add raises RuntimeError: {ADD_BAD_NAME.text}",
        area="replay",
    ),
    Rule(
        code="PP405",
        name="replay-roundtrip-mismatch",
        severity=Severity.ERROR,
        summary="An auxiliary entry does not come back the same after transport, pop and add.",
        explanation=(
            "The tensors added back after pop were compared with those sent, element by element "
            "and bit for bit, on the sender's device: keys, dtype, shape, layout, quantizer "
            "parameters and every byte. The wire rebuilds each tensor from dtype and size only, "
            "so what it cannot describe is lost or scrambled."
        ),
        causes=(
            "A quantized tensor: its quantizer parameters do not travel.",
            "A non-contiguous CUDA tensor: NCCL sends its memory as it lies and the receiver "
            "reads it as row-major.",
            "An implementation of pop or add that changes what it hands on.",
        ),
        fix="Send plain, dense, contiguous tensors and carry any parameters as tensors of "
        "their own.",
        example="'__sampling_observer_output__.scores': the quantizer parameters were not kept",
        area="replay",
    ),
    Rule(
        code="PP406",
        name="replay-impl-divergence",
        severity=Severity.ERROR,
        summary="ppaux's reference transport and sglang's own module disagree on this payload.",
        explanation=(
            "With --impl both, the same payload was replayed with ppaux's reference transport "
            "and with the sglang module found (installed, --sglang-path directory or wheel). "
            "They ended differently: another outcome, message, output, remaining keys or round "
            "trip. The reference follows sglang 0.5.19 - 0.5.23; a difference means the module "
            "is not a stock release's or has been patched."
        ),
        causes=(
            "A modified, patched or non-release sampling_observer_pp.py.",
            "A sglang release newer than the ones ppaux knows.",
        ),
        fix="Compare the module with a release (ppaux check-skew, or its sha256 in the JSON "
        "report) and replay with --impl sglang to see what it does.",
        example="reference and sglang disagree on error",
        area="replay",
    ),
    Rule(
        code="PP407",
        name="replay-wire-changed",
        severity=Severity.WARNING,
        summary="An auxiliary tensor keeps its values but not its device, strides or class.",
        explanation=(
            "The wire sends only the device type, dtype and size: the receiver allocates on its "
            "own current device (the sender's index is dropped), makes a contiguous tensor, and "
            "gives back a plain torch.Tensor without requires_grad. The values are bit-identical, "
            "but code on rank 0 that relies on the rest breaks."
        ),
        causes=(
            "Auxiliary tensors on a device other than the receiver's current one (see PP105).",
            "A non-contiguous tensor sent through an all-gather group (see PP106).",
            "An nn.Parameter or another tensor subclass (see PP109).",
        ),
        fix="Do not rely on device index, strides or class on rank 0: move, make contiguous "
        "and detach auxiliary tensors before sending them.",
        example="'__sampling_observer_output__.b': the tensor came back on another device "
        "(sent cuda:1, received cuda:0)",
        area="replay",
    ),
    Rule(
        code="PP408",
        name="replay-not-reproduced",
        severity=Severity.WARNING,
        summary="Replaying a capture does not end the way the capture recorded.",
        explanation=(
            "A ppaux capture records the exception the call raised. Replayed with the chosen "
            "sender, transport and implementation, the payload ended otherwise. A capture taken "
            "on rank 0 with a validating sender (the default) usually stops at add: the last "
            "stage that sent it did not validate."
        ),
        causes=(
            "The capture's rank ran a non-validating sender: replay with --sender legacy.",
            "The capture was taken with another sglang or a patched transport: replay with "
            "--impl sglang --sglang-path <that release>.",
        ),
        fix="Replay with the sender and implementation of the run that was captured.",
        example=f"the capture recorded RuntimeError: {POP_NON_TENSOR.text}",
        area="replay",
    ),
    Rule(
        code="PP409",
        name="replay-no-aux-output",
        severity=Severity.INFO,
        summary="Pop finds no auxiliary entries: rank 0 gets no auxiliary output.",
        explanation=(
            "No key of the dict starts with exactly '__sampling_observer_output__.', so pop "
            "returns None and the observer on rank 0 receives nothing. That is right for a "
            "message without an auxiliary output, and silent loss for a key that only looks "
            "like the prefix."
        ),
        causes=(
            "The dict carries no auxiliary output (a proxy message, or no observer on the "
            "last stage).",
            "A near-miss key (see PP104).",
        ),
        fix="If an output was expected, check the keys with 'ppaux inspect' (PP104).",
        example="pop finds no auxiliary entries",
        area="replay",
    ),
    Rule(
        code="PP410",
        name="replay-sender-as-recorded",
        severity=Severity.INFO,
        summary="A capture of rank 0's failing pop is replayed as rank 0 received it.",
        explanation=(
            "rank 0 pops what the last stage sent. A message that reached rank 0's pop with a "
            "non-tensor auxiliary value was sent without add's checks, so replay sends it the "
            "same way (the legacy sender) and reproduces the recorded error. A validating "
            "sender, as every sglang release has, would have stopped the message on the last "
            "stage: the last stage did not run the release's sender."
        ),
        causes=(
            "The last stage runs another sglang release, a patched scheduler or an "
            "out-of-tree sender that writes the keys without add.",
        ),
        fix="Compare the stages' sglang with 'ppaux check-skew'; replay with --sender "
        "validating to see where a validating sender stops the message.",
        example="a validating sender would have refused it at add: RuntimeError: "
        + ADD_NOT_TENSOR.format("scores"),
        area="replay",
    ),
)
