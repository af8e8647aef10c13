"""Rules about how two dumps differ (codes PP6xx), for ``ppaux diff A B``.

A difference in an auxiliary entry (a ``__sampling_observer_output__.`` key, or a name of a
capture's add-side output) is an error, so that ``diff`` exits 1 on it; the same difference in
any other entry is reported with severity info.
"""

from __future__ import annotations

from ppaux.report.findings import Rule, Severity
from ppaux.sglang.messages import POP_NON_TENSOR

__all__ = ["RULES"]

_AUX = (
    "The finding is an error for an auxiliary entry (what rank 0 pops) and info for any "
    "other entry of the message."
)

RULES = (
    Rule(
        code="PP601",
        name="diff-entry-added",
        severity=Severity.ERROR,
        summary="An entry is in the second dump and not in the first.",
        explanation="The key is in B's tensor dict and absent from A's. " + _AUX,
        causes=(
            "The sender writes an auxiliary name that the other run did not (another observer, "
            "another sglang release's logprob key set).",
            "A key spelled differently in the two runs (see PP104).",
        ),
        fix="Check which run wrote the key; 'ppaux inspect' on each dump shows the whole dict.",
        example="'__sampling_observer_output__.entropy': only in B (a float32 tensor (2,))",
        area="diff",
    ),
    Rule(
        code="PP602",
        name="diff-entry-removed",
        severity=Severity.ERROR,
        summary="An entry is in the first dump and not in the second.",
        explanation="The key is in A's tensor dict and absent from B's. " + _AUX,
        causes=(
            "The second run's observer or sender no longer writes the name.",
            "A key spelled differently in the two runs (see PP104).",
        ),
        fix="Check which run dropped the key; 'ppaux inspect' on each dump shows the whole dict.",
        example="'__sampling_observer_output__.scores': only in A (a list of 4 floats)",
        area="diff",
    ),
    Rule(
        code="PP603",
        name="diff-kind-changed",
        severity=Severity.ERROR,
        summary="An entry holds a different kind of value: a tensor in one dump, not in the other.",
        explanation=(
            "The value's type differs between the dumps, for example a Python list in A and a "
            "tensor in B, which is what 'ppaux tensorize' changes. Under an auxiliary key only "
            "a tensor passes pop on rank 0. " + _AUX
        ),
        causes=(
            "One dump was rewritten with 'ppaux tensorize', or the sender was fixed to send a "
            "tensor (or broken to send a list).",
        ),
        fix="The side whose auxiliary values are all tensors is the one rank 0 accepts; see "
        "PP606 for the outcome of pop on each side.",
        example="'__sampling_observer_output__.scores': a list of 4 floats in A, a float32 "
        "tensor (4,) in B",
        area="diff",
    ),
    Rule(
        code="PP604",
        name="diff-tensor-changed",
        severity=Severity.ERROR,
        summary="A tensor's dtype, shape, stride, device, layout or class differs.",
        explanation=(
            "Both dumps hold a tensor under the key, described differently. The wire sends "
            "only device type, dtype and size, so a receiver sees a dtype or shape change "
            "directly, and code on rank 0 that relies on strides, device index or class sees "
            "the rest. " + _AUX
        ),
        causes=(
            "The sender computes the value differently (another dtype, another batch size).",
            "A non-contiguous view or a tensor on another device (see PP105, PP106).",
        ),
        fix="Make the sender produce the same dtype and layout as the run that works; "
        "contiguous tensors on one device travel unchanged.",
        example="'__sampling_observer_output__.scores': dtype float32 -> float16",
        area="diff",
    ),
    Rule(
        code="PP605",
        name="diff-values-differ",
        severity=Severity.ERROR,
        summary="An entry of the same kind holds different values.",
        explanation=(
            "Tensors are compared by a SHA-256 digest of the bytes they view, read from the "
            "storage records a block at a time (never the whole file in memory), a negative or "
            "conjugate view by the values torch.load gives it (the message says which was "
            "compared); other values "
            "by value. Two tensors are compared only when their dtype, shape and layout agree. "
            + _AUX
        ),
        causes=("Two different batches, or a sender that computes the value differently.",),
        fix="Expected between two batches; between two captures of the same batch it points "
        "at the sender's computation.",
        example="'__sampling_observer_output__.scores': the tensors' bytes differ (sha256 "
        "1f2e... in A, 9c0b... in B)",
        area="diff",
    ),
    Rule(
        code="PP606",
        name="diff-pop-outcome",
        severity=Severity.ERROR,
        summary="Pop on rank 0 ends differently on the two dumps: one side fails.",
        explanation=(
            "Each dict is run through the prediction of pop_auxiliary_output_from_pp_tensors "
            "that 'ppaux inspect' makes (sglang 0.5.19 - 0.5.23, PP-capable observer): one "
            "side pops, the other raises, or they raise different errors."
        ),
        causes=(
            "One dump holds a non-tensor under an auxiliary key (see PP101) or a key that is "
            "not a string (see PP103), the other does not.",
        ),
        fix="The failing side is the one to fix: 'ppaux inspect' names the entry at fault, "
        "'ppaux tensorize' converts what can be converted.",
        example=f"A: pop raises RuntimeError: {POP_NON_TENSOR.text}; B: pop succeeds",
        area="diff",
    ),
    Rule(
        code="PP607",
        name="diff-dict-unmatched",
        severity=Severity.ERROR,
        summary="A tensor dict is in one dump and has no counterpart in the other.",
        explanation=(
            "Tensor dicts are paired by where they are in the file (a capture's 'tensors' and "
            "'output', or a dict's place in the structure); a dict without a partner is not "
            "compared entry by entry. " + _AUX.replace("entry (what", "dict's entries (what")
        ),
        causes=(
            "A capture of add (with an add-side output) compared with a capture of pop.",
            "Dumps of different messages (an output message and a proxy message).",
        ),
        fix="Compare dumps of the same kind of message, or look at each with 'ppaux inspect'.",
        example="['output']: only in A",
        area="diff",
    ),
    Rule(
        code="PP608",
        name="diff-not-compared",
        severity=Severity.WARNING,
        summary="The values of an entry could not be compared.",
        explanation=(
            "ppaux reads what it can without running anything from the files: a numpy array's "
            "data, an object whose class it never imports, or a storage record that is missing "
            "or short cannot be compared byte for byte, so no verdict is given on them."
        ),
        causes=(
            "A numpy array or a custom object in the dict (see PP101, PP201).",
            "A truncated or damaged file (see PP113).",
        ),
        fix="Compare the values where the dumps were made, or repair the file.",
        example="'__sampling_observer_output__.scores': values not compared (storage record "
        "archive/data/1 is missing)",
        area="diff",
        inconclusive=True,
    ),
    Rule(
        code="PP609",
        name="diff-capture-meta",
        severity=Severity.INFO,
        summary="The two captures' metadata records differ.",
        explanation=(
            "Both files are ppaux captures; the fields named differ (the time, host and pid "
            "almost always do and are not listed). A capture rewritten by 'ppaux tensorize' "
            "records the file it was made from and the keys it converted."
        ),
        causes=(
            "Captures from different calls, ranks or hosts.",
            "A capture and its rewrite by 'ppaux tensorize'.",
        ),
        fix="Nothing to fix: this says what each capture records.",
        example="capture metadata differs in exception_type, exception_message",
        area="diff",
    ),
    Rule(
        code="PP610",
        name="diff-pop-both-fail",
        severity=Severity.ERROR,
        summary="Pop on rank 0 fails on both dumps, with the same error.",
        explanation=(
            "Each dict is run through the prediction of pop_auxiliary_output_from_pp_tensors "
            "that 'ppaux inspect' makes (sglang 0.5.19 - 0.5.23, PP-capable observer), and both "
            "sides raise the same error. The entries may all be the same, but 'same' here means "
            "equally broken: rank 0 would refuse either dump."
        ),
        causes=(
            "Two captures of the same failure, or a dump compared with itself.",
            "A rewrite that did not convert the entry at fault.",
        ),
        fix="Fix either side as 'ppaux inspect' says (it names the entry at fault); 'ppaux "
        "tensorize' converts what can be converted.",
        example=f"A and B: pop raises RuntimeError: {POP_NON_TENSOR.text}",
        area="diff",
    ),
)
