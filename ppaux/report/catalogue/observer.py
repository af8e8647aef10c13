"""Rules about a sampling observer driven through sglang's PP path (codes PP7xx), for
``ppaux check-observer`` and ``ppaux.testing.assert_pp_safe``."""

from __future__ import annotations

from ppaux.report.findings import Rule, Severity
from ppaux.sglang.messages import (
    ADD_BAD_NAME,
    ADD_DUPLICATE,
    ADD_EMPTY,
    ADD_NOT_TENSOR,
    ADD_UNSUPPORTED,
    POP_NON_TENSOR,
    POP_NOT_RECONSTRUCTED,
    POP_UNSUPPORTED,
)

__all__ = ["RULES"]

_FIX_PAIR = (
    "Give the output class to_pp_tensors() returning a non-empty dict of non-empty string names "
    "to tensors, and the observer from_pp_tensors(tensors) rebuilding the same output from "
    "them ('ppaux explain' on this code shows the rule with an example)."
)

RULES = (
    Rule(
        code="PP701",
        name="observer-output-not-pp",
        severity=Severity.ERROR,
        summary="The observer's output has no to_pp_tensors: the last stage's add raises.",
        explanation=(
            "With pipeline parallelism the last stage puts the auxiliary output into the dict "
            "it sends to rank 0 with add_auxiliary_output_to_pp_tensors, which first asks "
            "whether the output has a to_pp_tensors attribute (a runtime-checkable Protocol). "
            "This output has none, so the last stage raises before anything is sent. A PP=1 "
            "test never asks."
        ),
        causes=(
            "The output class was written for one GPU only.",
            "after_sample returns sglang's CompositeDeviceAuxiliaryOutput (append_auxiliary_"
            "output of several outputs), which has no to_pp_tensors.",
        ),
        fix=_FIX_PAIR,
        sglang_error=ADD_UNSUPPORTED.text,
        example=f"the last stage's add raises RuntimeError: {ADD_UNSUPPORTED.text}",
        area="observer",
    ),
    Rule(
        code="PP702",
        name="observer-not-pp",
        severity=Severity.ERROR,
        summary="The observer has no from_pp_tensors: rank 0's pop raises.",
        explanation=(
            "Rank 0 hands the tensors it received to its own observer's from_pp_tensors "
            "(pop_auxiliary_output_from_pp_tensors). Pop first asks whether the observer has "
            "that attribute; this one has none, so rank 0 raises on the first step that "
            "carries output."
        ),
        causes=("The observer class was written for one GPU only.",),
        fix=_FIX_PAIR,
        sglang_error=POP_UNSUPPORTED.text,
        example=f"rank 0's pop raises RuntimeError: {POP_UNSUPPORTED.text}",
        area="observer",
    ),
    Rule(
        code="PP703",
        name="observer-pp-output-empty",
        severity=Severity.ERROR,
        summary="to_pp_tensors returns an empty mapping (or None): the last stage's add raises.",
        explanation=(
            "add tests the value to_pp_tensors returned for truth: an empty dict, None, [] or 0 "
            "all fail, on the last stage."
        ),
        causes=(
            "to_pp_tensors returns only the tensors that are set, and none were this step.",
            "to_pp_tensors forgot its return statement.",
        ),
        fix="Always send at least one tensor: an empty tensor (torch.empty(0)) stands for "
        "'nothing this step' and costs nothing on the wire.",
        sglang_error=ADD_EMPTY.text,
        example=f"the last stage's add raises RuntimeError: {ADD_EMPTY.text}; to_pp_tensors "
        "returned dict {}",
        area="observer",
    ),
    Rule(
        code="PP704",
        name="observer-pp-name-invalid",
        severity=Severity.ERROR,
        summary="A name from to_pp_tensors is empty or not a string: the last stage's add raises.",
        explanation=(
            "Each name becomes the key '__sampling_observer_output__.' + name; add refuses a "
            "name that is not a non-empty str (an int, a tuple, bytes, '')."
        ),
        causes=("Names built from indices or enum members instead of strings.",),
        fix="Use fixed, non-empty string names ('entropy', 'top_ids').",
        sglang_error=ADD_BAD_NAME.text,
        example=f"the last stage's add raises RuntimeError: {ADD_BAD_NAME.text}; the entry at "
        "fault is '0', a float32 (4,) cpu",
        area="observer",
    ),
    Rule(
        code="PP705",
        name="observer-pp-non-tensor",
        severity=Severity.ERROR,
        summary="to_pp_tensors returns a value that is not a tensor: the last stage's add raises.",
        explanation=(
            "Every value sent to rank 0 must be a torch.Tensor (subclasses pass). A list, a "
            "numpy array, a float or None is refused by a validating last stage; a last stage "
            "that does not validate sends it inside the pickled metadata and rank 0 fails "
            "instead (PP706)."
        ),
        causes=(
            "Per-request values kept as a Python list (scores.tolist()) or a numpy array.",
            "An optional field that is None on some steps.",
        ),
        fix="Return tensors only: torch.as_tensor(values) for lists and arrays, and rebuild "
        "the list in from_pp_tensors or consume if the host side needs one.",
        sglang_error=ADD_NOT_TENSOR.text,
        example=f"the last stage's add raises RuntimeError: {ADD_NOT_TENSOR.format('scores')}; "
        "the entry at fault is 'scores', a list [0.5, 0.25]",
        area="observer",
    ),
    Rule(
        code="PP706",
        name="observer-rank0-non-tensor",
        severity=Severity.ERROR,
        summary="Rank 0 receives a non-tensor auxiliary value and its pop raises.",
        explanation=(
            "With a last stage that does not validate (--sender legacy: a patched add, "
            "out-of-tree code writing the keys), a non-tensor value rides inside the pickled "
            "metadata, arrives as a copy of the same Python object, and rank 0's pop refuses "
            "it: the error that started this project."
        ),
        causes=("The same as PP705, behind a sender that does not check.",),
        fix="Return tensors only from to_pp_tensors (see PP705).",
        sglang_error=POP_NON_TENSOR.text,
        example=f"rank 0's pop raises RuntimeError: {POP_NON_TENSOR.text}; the entry at fault is "
        "'scores', a list [0.5, 0.25]",
        area="observer",
    ),
    Rule(
        code="PP707",
        name="observer-not-reconstructed",
        severity=Severity.ERROR,
        summary="from_pp_tensors returns None: rank 0's pop raises.",
        explanation=(
            "Pop treats None from from_pp_tensors as a failure to rebuild the output and "
            "raises on rank 0."
        ),
        causes=(
            "from_pp_tensors forgot its return statement.",
            "from_pp_tensors returns None when a name it expects is missing.",
        ),
        fix="Return the rebuilt output from from_pp_tensors, always.",
        sglang_error=POP_NOT_RECONSTRUCTED.text,
        example=f"rank 0's pop raises RuntimeError: {POP_NOT_RECONSTRUCTED.text}",
        area="observer",
    ),
    Rule(
        code="PP708",
        name="observer-transport-error",
        severity=Severity.ERROR,
        summary="The last stage's add or rank 0's pop raises another error on this output.",
        explanation=(
            "add or pop raised an error other than the ones above, for example Python's own "
            "AttributeError when to_pp_tensors returns something without .items() (a list of "
            f"pairs), or {ADD_DUPLICATE.format('scores')!r} when a name is sent twice. The "
            "message is verbatim."
        ),
        causes=(
            "to_pp_tensors returns a list or tuple instead of a mapping.",
            "Two outputs in one message use the same name.",
        ),
        fix="Return a dict from to_pp_tensors, with names unique within the message.",
        example="the last stage's add raises AttributeError: 'list' object has no attribute "
        "'items'",
        area="observer",
    ),
    Rule(
        code="PP709",
        name="observer-wire-refused",
        severity=Severity.ERROR,
        summary="A tensor of the output cannot cross sglang's PP wire.",
        explanation=(
            "sglang's send_tensor_dict sends each tensor with torch.distributed, first as "
            "reshape(1, -1)[0] for the scheduler's attention-TP group (passed in every "
            "release's default setup, even of one rank): torch refuses that reshape for a "
            "sparse tensor, c10d has no send for a quantized one (NotImplementedError), gloo "
            "refuses a CPU tensor the reshape leaves non-contiguous, such as x[::2] ('input "
            "tensor has to be contiguous'), and a value pickle cannot handle fails before "
            "anything is sent. The metadata may already be on its way, so rank 0 waits for "
            "data that never comes."
        ),
        causes=(
            "A sparse tensor (to_sparse()) in to_pp_tensors.",
            "A strided view (x[::2]) sent as it is; a transposed or sliced one is copied.",
        ),
        fix="Send dense, contiguous tensors: t.to_dense().contiguous(); rebuild the sparse "
        "form in from_pp_tensors if rank 0 needs it.",
        example="the wire transport fails on the sender: RuntimeError: reshape is not "
        "implemented for sparse tensors",
        area="observer",
    ),
    Rule(
        code="PP710",
        name="observer-hook-raised",
        severity=Severity.ERROR,
        summary="One of the observer's or output's own methods raises.",
        explanation=(
            "ppaux called the target's code as sglang does (is_active, before_grammar, "
            "after_sample, to_pp_tensors, from_pp_tensors, copy_to_host, consume) and that "
            "method raised. The message names the method, the exception and the side it ran on "
            "(the last stage, rank 0, or the single-stage path)."
        ),
        causes=(
            "from_pp_tensors reads a name to_pp_tensors does not send.",
            "Rank 0's observer relies on state that only the last stage's observer has (it is "
            "another instance in another process: it never ran before_grammar or "
            "after_sample).",
            "consume assumes one commit per request, but commits are None for requests that "
            "got no new token.",
        ),
        fix="Fix the method named; rank 0's from_pp_tensors must rebuild the output from the "
        "tensors alone.",
        example="from_pp_tensors raised KeyError: 'entropy' on rank 0 (batch size 1, step 0)",
        area="observer",
    ),
    Rule(
        code="PP711",
        name="observer-pp-output-differs",
        severity=Severity.ERROR,
        summary="The output rank 0 rebuilds differs from the one the last stage sent.",
        explanation=(
            "Silent corruption: sglang raises nothing. The output from_pp_tensors rebuilt on "
            "rank 0 was compared field by field with the output after_sample returned: a "
            "tensor's dtype, shape, device or bits differ, or a field is missing, extra or has "
            "another value. Rank 0's consume is then handed values a single GPU would not "
            "have produced; which fields it reads is not recorded, so whether the responses "
            "carry them is not known here (PP712 says where the requests differ)."
        ),
        causes=(
            "from_pp_tensors maps names to the wrong fields, or casts (float16 on the wire, "
            "float32 expected).",
            "A field that is not sent (a Python value kept on the output) is rebuilt with a "
            "default on rank 0.",
            "The wire put the tensor on rank 0's current CUDA device, not the sender's index.",
        ),
        fix="Send every field the host side needs, and rebuild each from its own name with its "
        "own dtype and shape.",
        example=".entropy of the output rank 0 rebuilt differs (bits): single stage float32 (4,) "
        "cpu [0.1, 0.2, ...], PP float32 (4,) cpu [0.2, 0.1, ...]",
        area="observer",
    ),
    Rule(
        code="PP712",
        name="observer-consume-differs",
        severity=Severity.ERROR,
        summary="What consume recorded on a request differs between the PP and single-stage paths.",
        explanation=(
            "Silent corruption: sglang raises nothing. After the same steps, the stand-in "
            "requests of the single-stage path and of rank 0 were compared attribute by "
            "attribute (customized_info and anything else consume set). They differ, so the "
            "response metadata of a PP deployment differs from a single GPU's."
        ),
        causes=(
            "The rebuilt output differs (see PP711).",
            "consume reads state that only the last stage's observer holds.",
        ),
        fix="Make from_pp_tensors rebuild everything copy_to_host and consume read.",
        example=".customized_info['entropy'][0] of request 0 after consume differs (value): "
        "single stage float 0.5, PP float 0.0",
        area="observer",
    ),
    Rule(
        code="PP713",
        name="observer-output-aliased",
        severity=Severity.ERROR,
        summary="An output's tensors share memory that the next step overwrites.",
        explanation=(
            "The output of an earlier step changed when a later step ran: its tensors are "
            "views of a buffer the observer reuses. sglang's contract warns that device "
            "tensors must not alias (CUDA-graph) static buffers a later replay can overwrite "
            "before the scheduler's copy; on CPU the scheduler's copy returns the very tensor, "
            "so consume reads the buffer as the next step left it."
        ),
        causes=(
            "after_sample returns a view of a preallocated buffer (self.buf[:n]) that the next "
            "step writes.",
            "A CUDA-graph static output tensor handed out as it is.",
        ),
        fix="Return a copy from after_sample (buffer[:n].clone()), or double-buffer.",
        example="the output of step 0 (batch size 4) changed by step 2: .entropy was float32 "
        "(4,) cpu [...], is now float32 (4,) cpu [...]",
        area="observer",
    ),
    Rule(
        code="PP714",
        name="observer-no-output",
        severity=Severity.WARNING,
        summary="The observer produced no auxiliary output, so nothing was checked.",
        explanation=(
            "In every step is_active returned False, before_grammar returned None or "
            "after_sample returned None. No output went down either path: the check could not "
            "say anything. Outputs of your own are a zero-argument callable returning them, "
            "given as outputs= to ppaux.testing and as --outputs module:attr to check-observer."
        ),
        causes=(
            "The observer activates only for requests with custom parameters the synthetic "
            "batch does not carry.",
        ),
        fix="Make the observer active for the stand-in sampling_info, or send outputs of your own.",
        example="the observer produced no auxiliary output in any step",
        area="observer",
        inconclusive=True,
        always_reported=True,
    ),
    Rule(
        code="PP715",
        name="observer-process-ended",
        severity=Severity.ERROR,
        summary=(
            "The target ended, hung, forked, signalled ppaux, wrote over its records or left "
            "timers running while it was checked."
        ),
        explanation=(
            "check-observer runs the target in a child process of its own. The child exited or "
            "was killed by a signal before it sent every record, took longer than --timeout "
            "over one step (its whole process group is killed), forked a copy that tried to "
            "report, wrote bytes over the descriptor its records travel on or sent records out "
            "of the check's order (it is stopped there), sent more records or bytes than the "
            "limits max_record_bytes, max_step_records and max_run_record_bytes allow (it is "
            "stopped there), or "
            "left interval timers running after the last step (they are cancelled), or sent "
            "ppaux's own process a signal that would have ended it. A finding "
            "about an exit or a hang names the method that was running. In sglang the same "
            "code runs inside the scheduler, which it would stop, hang or leave with stray "
            "timers. A thread or a process left running is PP718, a warning."
        ),
        causes=(
            "os._exit(), os.abort() or a crash in native code in the observer or its module.",
            "A loop or a blocking call that never returns.",
            "os.fork() in the observer's code, a copy that tried to report.",
            "Writes to descriptors the observer's code did not open.",
            "signal.alarm() or setitimer() left running, or os.kill(os.getppid(), ...).",
        ),
        fix="Make the observer's methods return promptly, without ending, forking, "
        "signalling or leaving timers behind; the finding names what "
        "the child did.",
        example="the target's process was killed by signal SIGKILL before it sent every record",
        area="observer",
        always_reported=True,
    ),
    Rule(
        code="PP716",
        name="observer-not-compared",
        severity=Severity.WARNING,
        summary="Some of the target's values were not compared: a difference in them is not seen.",
        explanation=(
            "The check describes each value on both paths to compare them. A value nested "
            "deeper than max_value_nesting, one with more items than max_digested_items, or "
            "an object known only by its address could not be described, so the two paths "
            "were not compared there. The check is not conclusive for those values; --strict "
            "makes this an error."
        ),
        causes=(
            "A deeply nested list or dict on the output or in customized_info.",
            "A very large container on the output or a request.",
        ),
        fix="Keep such values off what the observer sends and records, or raise the limit "
        "the finding names.",
        example="1 value(s) not compared, so a difference in them is not reported: "
        ".customized_info['deep'] of request 0: not compared: nested more than 64 deep",
        area="observer",
        inconclusive=True,
    ),
    Rule(
        code="PP717",
        name="observer-changed-by-send",
        severity=Severity.ERROR,
        summary="to_pp_tensors changes the output in place while sending it.",
        explanation=(
            "Silent divergence: sglang raises nothing. The output was described when "
            "after_sample returned it and again once to_pp_tensors returned: a field differs "
            "(a tensor's bits, a value, a field removed). sglang's last stage sends the output "
            "and goes on using it: its own copy_to_host and consume read the changed field, "
            "while rank 0 rebuilds the output from what was sent. A field that is not itself "
            "sent is changed without any difference on the wire, so PP711 cannot see it."
        ),
        causes=(
            "to_pp_tensors updates a counter or a scratch tensor of the output (self.sends += 1).",
            "to_pp_tensors scales, clamps or casts a field in place (mul_, clamp_) before packing.",
        ),
        fix="Build what to_pp_tensors returns from copies (x * 100, x.clamp(...)) and leave the "
        "output's own fields as after_sample made them.",
        example="to_pp_tensors changed .sends of the output in place while sending it (bits): "
        "was float32 (4,) cpu [0, 0, 0, 0], is now float32 (4,) cpu [1, 1, 1, 1]",
        area="observer",
    ),
    Rule(
        code="PP718",
        name="observer-thread-left",
        severity=Severity.WARNING,
        summary="The target left a non-daemon thread or a process running after the last step.",
        explanation=(
            "A thread the observer's module or methods started (threading.Thread is non-daemon "
            "unless told) was still running once the check's last step was over. The check "
            "stopped it with its process. In sglang it runs on inside the scheduler, which "
            "it does not stop: sglang's PP event loop never returns, and a shutdown kills the "
            "scheduler processes rather than waiting for their threads (0.5.19 - 0.5.23). It "
            "is named so that a thread nobody meant to leave is seen; --ignore PP718 waives it. "
            "A process the target started (a sidecar exporter, on Linux also one in a session "
            "of its own) and still running when its process ended is the same kind of thing "
            "(extra.end 'outlived'): the check kills it and names it; in sglang it runs on "
            "beside the scheduler and changes nothing the check compares, so it is a warning "
            "too, not a way the run ended (a copy of the target's process that tries to report "
            "is a fork, PP715)."
        ),
        causes=(
            "A metrics flusher or exporter started at import without daemon=True.",
            "A worker thread an observer method starts and never joins.",
            "A sidecar process started at import (subprocess.Popen) and never waited for.",
        ),
        fix="Start the thread with daemon=True, or join it (wait for the process) where the "
        "observer is done with it; one meant to run for the server's life may stay, and the "
        "finding be ignored.",
        example="the target left 1 thread(s) running after the last step (metrics-flusher); "
        "they were stopped with its process, and in sglang they would run on inside the "
        "scheduler",
        area="observer",
    ),
)
