"""Rules about capturing from a running sglang: the plugin, its settings, the directory, and
what the checkpoints along the PP output path found (PP5xx)."""

from __future__ import annotations

from ppaux.report.findings import Rule, Severity
from ppaux.sglang.messages import POP_NON_TENSOR

__all__ = ["RULES"]

RULES = (
    Rule(
        code="PP501",
        name="capture-skipped",
        severity=Severity.WARNING,
        summary="Captures were skipped because the capture directory was full.",
        explanation=(
            "A capture directory is bounded by max_files and max_bytes, counted over the "
            "capture files on disk. Once either is reached, new captures are not written: they "
            "are counted in .ppaux-capture.skipped and the first captures are kept, so the "
            "earliest failures are the ones on disk."
        ),
        causes=(
            "The same transport error repeated on every batch and filled the directory.",
            "The bounds are small for the size of the tensor dicts.",
            "when='always' recorded healthy traffic until the bounds were reached.",
        ),
        fix=(
            "Inspect the captures that are there (ppaux capture list, ppaux inspect); move them "
            "away, or raise PPAUX_CAPTURE_MAX_FILES / PPAUX_CAPTURE_MAX_BYTES, to capture more."
        ),
        example="3 capture(s) were skipped",
        area="capture",
    ),
    Rule(
        code="PP502",
        name="capture-inactive",
        severity=Severity.WARNING,
        summary="The sglang plugin would not capture anything in this environment.",
        explanation=(
            "The plugin registers its hooks only when ppaux's 'ppaux_capture' entry point is "
            "installed in sglang's Python environment, PPAUX_CAPTURE_DIR is set, SGLANG_PLUGINS "
            "(when set) names it, and the sglang there has the PP auxiliary transport (0.5.19 "
            "or later) and the plugin framework."
        ),
        causes=(
            "PPAUX_CAPTURE_DIR is not set in the environment sglang is started with.",
            "SGLANG_PLUGINS lists plugins and 'ppaux_capture' is not one of them.",
            "ppaux is installed in another Python environment than sglang.",
            "sglang is older than 0.5.19, or not installed here.",
        ),
        fix=(
            "Install ppaux into the Python environment that runs sglang, set PPAUX_CAPTURE_DIR "
            "(and add ppaux_capture to SGLANG_PLUGINS if that is set), then restart sglang; or "
            "call ppaux.capture.install(directory) from your own launcher."
        ),
        example="PPAUX_CAPTURE_DIR is not set",
        area="capture",
    ),
    Rule(
        code="PP503",
        name="capture-dir-unwritable",
        severity=Severity.ERROR,
        summary="The capture directory cannot be written.",
        explanation=(
            "A capture is written as a temporary file in the directory and renamed into place, "
            "under a lock file in the same directory. When the directory cannot be created or "
            "written, each failing call logs one warning per process and no capture is kept; "
            "sglang's own error is unaffected."
        ),
        causes=(
            "The directory belongs to another user or is on a read-only file system.",
            "A path component is a file, not a directory.",
        ),
        fix="Point PPAUX_CAPTURE_DIR at a directory the sglang processes can write.",
        example="/var/tmp/ppaux: permission denied",
        area="capture",
    ),
    Rule(
        code="PP504",
        name="capture-bad-setting",
        severity=Severity.ERROR,
        summary="A PPAUX_CAPTURE_* setting is invalid, so the plugin stays off.",
        explanation=(
            "The plugin reads PPAUX_CAPTURE_WHEN ('error' or 'always'), "
            "PPAUX_CAPTURE_MAX_FILES, PPAUX_CAPTURE_MAX_BYTES (bytes, or with a K, M, G or T "
            "suffix) and PPAUX_CAPTURE_SAMPLE_EVERY (whole numbers of at least 1). With an "
            "invalid value it logs a warning and captures nothing rather than guess."
        ),
        causes=("A typo or a unit the setting does not accept.",),
        fix="Correct the variable named in the message and restart sglang.",
        example="PPAUX_CAPTURE_MAX_BYTES='lots': not a whole number",
        area="capture",
    ),
    Rule(
        code="PP505",
        name="capture-unreadable",
        severity=Severity.WARNING,
        summary=(
            "A file named like a capture, or another dump file in the capture directory, is "
            "not a readable ppaux capture."
        ),
        explanation=(
            "Captures are renamed into place only when complete, so a capture-*.pt file that "
            "cannot be read as a capture was not written by ppaux capture, or was changed or "
            "truncated afterwards; it is listed with the reason. Another dump file (*.pt, "
            "*.pkl, ...) is listed when it holds a capture (one renamed or copied in); one "
            "that cannot be read, or holds something else, is left out of the list and "
            "reported, so that no file is passed over unsaid."
        ),
        causes=(
            "Another tool wrote a file with a capture-*.pt name into the directory.",
            "The file was copied incompletely or edited.",
        ),
        fix="Run ppaux inspect on the file to see what it holds; move it out of the directory.",
        example="capture-20261202T100000Z-node-3-4242-0001-pop.pt: truncated or corrupt zip file",
        area="capture",
    ),
    Rule(
        code="PP506",
        name="capture-culprit",
        severity=Severity.ERROR,
        summary="A non-tensor auxiliary value entered the output message in a named function.",
        explanation=(
            "With capture on, ppaux looks at each output message at every hop of sglang's PP "
            "output path: add returned, _pp_prepare_tensor_dict returned, "
            "_pp_send_dict_to_next_stage called, send_tensor_dict called and returned, "
            "recv_tensor_dict returned, pop called. The message was clean at one hop and "
            "carried a non-tensor auxiliary value at the next; the function named here is the "
            "one that really ran between the two (resolved on the live objects: a subclass "
            "override, a wrapper, a monkeypatch, another plugin's hook), and it is not sglang's "
            "release code. When the next dirty message was traced, the line that wrote the "
            "value is the location. Rank 0 fails later with the error below."
        ),
        causes=(
            "A Scheduler subclass whose _pp_prepare_tensor_dict writes an auxiliary key itself.",
            "Code that edits the prepared message (last_rank_comm_queue) before it is sent.",
            "A custom transport wrapping send_tensor_dict that converts tensors.",
            "A patched add_auxiliary_output_to_pp_tensors that no longer checks its values.",
            "Another plugin's hook on add or on the scheduler that injects a value.",
        ),
        fix=(
            "Fix the named function so that every __sampling_observer_output__.* value stays a "
            "torch.Tensor (or remove the override, wrapper or hook); PPAUX_CAPTURE_STRICT=1 "
            "makes the last stage raise right there while you look."
        ),
        sglang_error=POP_NON_TENSOR.text,
        example=(
            "'scores' (list) entered between _pp_prepare_tensor_dict returned and "
            "_pp_send_dict_to_next_stage called, in app.MyScheduler._pp_prepare_tensor_dict"
        ),
        area="capture",
    ),
    Rule(
        code="PP507",
        name="capture-culprit-unresolved",
        severity=Severity.WARNING,
        summary="A non-tensor auxiliary value entered between two hops; no function was named.",
        explanation=(
            "The trail bounds where the value entered (the last clean hop and the first dirty "
            "one), but every function found on the live objects between them is sglang's "
            "release code: the value was written by code that was not on the call path at the "
            "dirty hop (a callback, another thread, code called from the event loop). ppaux "
            "traces the next dirty message between the same two hops; its capture names the "
            "line that wrote the value."
        ),
        causes=(
            "Code run from the event loop that edits messages waiting in last_rank_comm_queue.",
            "Another thread that holds a reference to the message dict.",
        ),
        fix=(
            "Look at the next capture of the same process (ppaux capture list): it carries the "
            "traced line. Otherwise search the code that runs between the two hops for writes "
            "to __sampling_observer_output__.* keys."
        ),
        sglang_error=POP_NON_TENSOR.text,
        example=(
            "'scores' (list) entered between _pp_prepare_tensor_dict returned and "
            "_pp_send_dict_to_next_stage called"
        ),
        area="capture",
        inconclusive=True,
    ),
    Rule(
        code="PP508",
        name="capture-dirty-on-arrival",
        severity=Severity.ERROR,
        summary="Rank 0 received the output message already carrying a non-tensor value.",
        explanation=(
            "Rank 0's trail starts dirty at recv_tensor_dict: the value was put in on the last "
            "stage or on the way (the wire, or code around send_tensor_dict and "
            "recv_tensor_dict). The last stage's capture, written there before the message was "
            "sent, names the code when its checkpoints are on; when the last stage saw the "
            "message clean up to send_tensor_dict, the wire or something around it is at fault."
        ),
        causes=(
            "Code on the last stage, named by that stage's capture (PP506).",
            "A custom transport on either side of the wire.",
        ),
        fix=(
            "Enable capture on the last stage too (same PPAUX_CAPTURE_DIR or another) and read "
            "its capture with ppaux capture list / ppaux inspect."
        ),
        sglang_error=POP_NON_TENSOR.text,
        example="'scores' (list) already in the message when recv_tensor_dict returned",
        area="capture",
    ),
)
