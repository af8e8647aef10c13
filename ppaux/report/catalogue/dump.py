"""Rules about the contents of a captured pipeline-parallel tensor dict (codes PP1xx)."""

from __future__ import annotations

from ppaux.report.findings import Rule, Severity
from ppaux.sglang.messages import POP_NON_TENSOR

__all__ = ["RULES"]

_NON_TENSOR_CAUSES = (
    "Out-of-tree code writes '__sampling_observer_output__.*' keys straight into the tensor "
    "dict (a plugin, or a Scheduler subclass overriding _pp_prepare_tensor_dict), bypassing "
    "add_auxiliary_output_to_pp_tensors.",
    "add_auxiliary_output_to_pp_tensors was monkeypatched or wrapped and no longer refuses "
    "non-tensors.",
    "The last pipeline stage runs a modified or non-release sglang build whose sender does not "
    "validate (every release from 0.5.19 on validates).",
    "Something mutated the tensor dict between add on the last stage and pop on rank 0.",
)

RULES = (
    Rule(
        code="PP101",
        name="aux-non-tensor",
        severity=Severity.ERROR,
        summary="A value under an auxiliary key is not a tensor.",
        explanation=(
            "Rank 0 collects every key that starts with '__sampling_observer_output__.' and "
            "refuses the whole auxiliary output if any of those values is not a torch.Tensor. "
            "Non-tensor values cross the wire inside the pickled metadata, so they arrive as "
            "copies of the same Python object and the check on the receiver fires."
        ),
        causes=_NON_TENSOR_CAUSES,
        fix=(
            "Produce auxiliary values only through to_pp_tensors() and "
            "add_auxiliary_output_to_pp_tensors, and make each one a torch.Tensor (stack lists "
            "with torch.tensor / torch.stack; encode scalars as 0-d tensors). Check that every "
            "stage runs a release sglang with sender-side validation (ppaux check-skew)."
        ),
        sglang_error=POP_NON_TENSOR.text,
        example="'__sampling_observer_output__.scores': [0.1, 0.7] (a list)",
        area="payload",
    ),
    Rule(
        code="PP102",
        name="aux-empty-name",
        severity=Severity.WARNING,
        summary="A key is the bare auxiliary prefix, with an empty name.",
        explanation=(
            "Pop accepts a key equal to the prefix and hands the observer a tensor named '' "
            "(empty). The stock sender never writes one: add refuses empty names, so the key was "
            "written by other code."
        ),
        causes=(
            "Out-of-tree code built the key by hand from the prefix and an empty or missing name.",
            "A patched or modified add that no longer checks names.",
        ),
        fix="Give every auxiliary tensor a non-empty string name and add it through "
        "add_auxiliary_output_to_pp_tensors.",
        example="'__sampling_observer_output__.': tensor(...)",
        area="payload",
    ),
    Rule(
        code="PP103",
        name="non-string-key",
        severity=Severity.ERROR,
        summary="The tensor dict has a key that is not a string.",
        explanation=(
            "Pop calls key.startswith(prefix) on every key of the dict, so a key that is not a "
            "string makes pop fail with AttributeError before any auxiliary check runs."
        ),
        causes=("Code that fills the tensor dict used an int, tuple or other object as a key.",),
        fix="Use string keys only in pipeline-parallel tensor dicts.",
        example="{0: tensor(...)}",
        area="payload",
    ),
    Rule(
        code="PP104",
        name="aux-near-miss-key",
        severity=Severity.WARNING,
        summary="A key looks like the auxiliary prefix but is not it; pop ignores it silently.",
        explanation=(
            "Only keys that start with exactly '__sampling_observer_output__.' are auxiliary. A "
            "key with another case, no dot, stray whitespace, a doubled prefix or a typo (up to "
            "two letters swapped, dropped, added or wrong, as in '__sampling_obsever_output__.') "
            "is ignored by pop, so that output never reaches the observer and nothing reports it."
        ),
        causes=(
            "The key was built by hand with a typo instead of using the module's prefix constant.",
            "The prefix was applied twice (a name that already carried it).",
        ),
        fix="Build auxiliary keys only through add_auxiliary_output_to_pp_tensors, which applies "
        "the prefix once.",
        example="'__sampling_observer_output_scores' (missing dot)",
        area="payload",
    ),
    Rule(
        code="PP105",
        name="aux-device-mismatch",
        severity=Severity.WARNING,
        summary="Auxiliary tensors were saved on different devices.",
        explanation=(
            "The auxiliary tensors of one message should share one full device, and that of the "
            "message's other tensors (cuda:0 is not cuda:1). The wire sends only the device type: "
            "the receiver allocates every CUDA tensor on its own current device and the sender's "
            "index is dropped, so code that relies on the index breaks after the transfer."
        ),
        causes=(
            "An observer output built from tensors on several GPUs of the last stage.",
            "A tensor moved to another device (or to the CPU) after the others were made.",
        ),
        fix="Move every auxiliary tensor to the device of the stage's other outputs before "
        "to_pp_tensors() returns it.",
        example=(
            "'__sampling_observer_output__.a' on cuda:0, '__sampling_observer_output__.b' on cuda:1"
        ),
        area="payload",
    ),
    Rule(
        code="PP106",
        name="aux-non-contiguous",
        severity=Severity.WARNING,
        summary="An auxiliary tensor is not contiguous.",
        explanation=(
            "sglang's scheduler sends with its attention-TP group in every release's default "
            "setup, even of one rank, and the group's reshape(size, -1) copies a view it cannot "
            "keep; a strided view it keeps (x[::2]), or any view sent without the group (0.5.19 "
            "with DSA prefill context parallel), gloo refuses ('input tensor has to be "
            "contiguous') after the metadata has already gone, so the receiver only sees its "
            "peer close. Either way the receiver gets a contiguous tensor: the source strides "
            "are not kept."
        ),
        causes=("A transposed, sliced or expanded view was returned by to_pp_tensors().",),
        fix="Return tensor.contiguous() from to_pp_tensors().",
        example="'__sampling_observer_output__.a': shape (3, 2), stride (1, 3)",
        area="payload",
    ),
    Rule(
        code="PP107",
        name="aux-sparse-or-quantized",
        severity=Severity.ERROR,
        summary=(
            "A tensor of the sent dict (an auxiliary one or any other) is sparse, quantized or "
            "nested."
        ),
        explanation=(
            "sglang's send_tensor_dict sends every tensor at the dict's top level with "
            "torch.distributed, after the metadata: a sparse tensor fails at the reshape by the "
            "attention-TP group the scheduler passes (RuntimeError: reshape is not implemented "
            "for sparse tensors), a quantized one in torch.distributed's send, which has no "
            "kernel for it (NotImplementedError); a nested tensor fails before anything is sent, "
            "where the metadata takes each tensor's size (RuntimeError: NestedTensorImpl doesn't "
            "support sizes). Rank 0 waits for data that never comes. "
            "The wire could not carry the layout or the quantizer anyway: it describes a tensor "
            "by device type, dtype and size."
        ),
        causes=(
            "The observer output holds a sparse, quantized or nested tensor.",
            "Another entry of the dict (a hidden state, token ids) is sparse, quantized or nested.",
        ),
        fix="Send dense tensors: tensor.to_dense() or tensor.dequantize() (or the int repr and "
        "the scale as separate tensors); a nested tensor padded "
        "(torch.nested.to_padded_tensor) with its lengths as another tensor.",
        example=(
            "'__sampling_observer_output__.scores': a sparse COO tensor of shape (2, 2) with 2 "
            "values"
        ),
        area="payload",
    ),
    Rule(
        code="PP108",
        name="aux-meta-tensor",
        severity=Severity.WARNING,
        summary="An auxiliary tensor is on the meta device and holds no data.",
        explanation=(
            "A meta tensor has a shape and dtype but no storage: the wire sends nothing for it "
            "and rank 0 gets a new meta tensor, which no observer can read data from."
        ),
        causes=("A tensor made under a meta-device context or by shape inference.",),
        fix="Materialise the tensor on the stage's device before returning it.",
        example=(
            "'__sampling_observer_output__.scores': a float32 tensor of shape (2, 4) on device "
            "'meta'"
        ),
        area="payload",
    ),
    Rule(
        code="PP109",
        name="aux-tensor-subclass",
        severity=Severity.WARNING,
        summary="An auxiliary tensor is a tensor subclass or has attributes set on it.",
        explanation=(
            "Subclasses such as nn.Parameter, and tensors with attributes set on them "
            "(t.foo = 1), pass the sender's check, but the receiver rebuilds a plain tensor "
            "from dtype and size: the class and its attributes are lost."
        ),
        causes=(
            "A parameter or a custom tensor subclass was returned by to_pp_tensors().",
            "An attribute was set on an output tensor (t.foo = ...) for the observer to read.",
        ),
        fix="Return plain tensors (tensor.detach() or torch.Tensor.as_subclass(t, torch.Tensor)).",
        example="'__sampling_observer_output__.scores': torch.nn.Parameter(torch.zeros(2))",
        area="payload",
    ),
    Rule(
        code="PP110",
        name="tensor-inside-non-tensor",
        severity=Severity.INFO,
        summary="Tensors are nested inside a non-tensor value.",
        explanation=(
            "Only top-level tensor values take the tensor path of send_tensor_dict. A tensor "
            "inside a list, tuple, dict or object is pickled into the metadata instead: it is "
            "copied through the CPU group, slowly, and arrives on the CPU."
        ),
        causes=("A list or dict of tensors stored under one key.",),
        fix="Store each tensor under a key of its own, or stack them into one tensor.",
        example="'next_token_token_ids_logprobs_val': [tensor([0.1, 0.2]), tensor([0.3])]",
        area="payload",
    ),
    Rule(
        code="PP111",
        name="aux-in-non-output-message",
        severity=Severity.WARNING,
        summary="Auxiliary keys in a message that rank 0 does not pop.",
        explanation=(
            "Rank 0 pops auxiliary output only from the last stage's output message. In another "
            "message type, or in a proxy message carrying hidden_states/residual, the keys are "
            "never popped and are forwarded or dropped with the rest."
        ),
        causes=(
            "Out-of-tree code added auxiliary keys to the wrong dict.",
            "The capture was taken from the proxy path instead of the output path.",
        ),
        fix="Add auxiliary output only to the last stage's output message.",
        example=(
            "'__sampling_observer_output__.scores' in a message whose '__msg_type__' is 'proxy'"
        ),
        area="payload",
    ),
    Rule(
        code="PP112",
        name="aux-empty-tensor",
        severity=Severity.INFO,
        summary="An auxiliary tensor has no elements.",
        explanation="Empty tensors are not sent; the receiver rebuilds them from their metadata. "
        "That is harmless, but an empty auxiliary output is often a sign of a bug upstream.",
        causes=("The observer produced nothing for this batch.",),
        fix="Nothing to do if an empty output is expected.",
        example="'__sampling_observer_output__.scores': a float32 tensor of shape (0,)",
        area="payload",
    ),
    Rule(
        code="PP113",
        name="storage-record-missing",
        severity=Severity.ERROR,
        summary="A tensor's storage record is missing from the file or shorter than declared.",
        explanation="torch.load of this file fails: the data.pkl refers to a storage that the "
        "zip does not hold in full. Reported as PP117 (torch refuses the file) where nothing "
        "outside torch's allowlist runs first; as this code where the pickle also names such a "
        "global (a security finding), which torch.load(weights_only=False) would run before it "
        "stops.",
        causes=("The file was truncated or assembled by hand.",),
        fix="Capture the dict again; keep the whole file.",
        example="data.pkl refers to storage record 'data/1', which the zip does not hold",
        area="payload",
    ),
    Rule(
        code="PP116",
        name="tensor-outside-storage",
        severity=Severity.ERROR,
        summary="A tensor reaches past the end of its storage, or has more elements than int64 "
        "counts; or numpy refuses a numpy array's pickled state.",
        explanation="torch.load of this file fails: rebuilding the tensor sets a view "
        "(offset, shape, stride) on its storage, and torch refuses a view that reaches past the "
        "storage's last element or whose element count overflows int64. A numpy array is "
        "rebuilt by numpy's ndarray.__setstate__, which refuses a buffer of another size than "
        "its shape and dtype need, and any state other than the one numpy writes; "
        "torch.load(weights_only=False) then fails, and the default reader refuses numpy "
        "arrays.",
        causes=(
            "The file was assembled or edited by hand.",
            "A hostile file probing how readers compute sizes.",
        ),
        fix="Capture the dict again with torch.save; do not edit the pickle.",
        example="tensor shape (4,) at offset 2 reaches element 6 of a storage of 4",
        area="payload",
    ),
    Rule(
        code="PP114",
        name="no-tensor-dict",
        severity=Severity.INFO,
        summary="The file holds no tensor dict to check.",
        explanation="Nothing in the file looks like a pipeline-parallel tensor dict (a dict with "
        "string keys and tensor values), so no payload check ran.",
        causes=("The file is not a PP capture.",),
        fix="Point ppaux at a dump of the tensor dict itself, or at a ppaux capture file.",
        example="a file that holds [1, 2, 3] instead of a dict of tensors",
        area="payload",
        inconclusive=True,
    ),
    Rule(
        code="PP115",
        name="add-would-refuse",
        severity=Severity.ERROR,
        summary="A captured add-side output that the stock add refuses.",
        explanation=(
            "In a capture of a failing add_auxiliary_output_to_pp_tensors, the output's "
            "to_pp_tensors() mapping is recorded. The stock add checks each item in order: the "
            "name must be a non-empty string, the value a tensor, and the prefixed key new to the "
            "dict. The first item that fails stops add (earlier items stay inserted)."
        ),
        causes=(
            "The observer's to_pp_tensors() returns a non-tensor (a list, a float, None).",
            "Two outputs use the same name, or the dict already holds that auxiliary key.",
        ),
        fix="Return a mapping of non-empty string names to tensors from to_pp_tensors(), each "
        "name once.",
        example="to_pp_tensors() returned {'scores': [0.25, 0.75]} (a list, not a tensor)",
        area="payload",
    ),
    Rule(
        code="PP117",
        name="torch-refuses",
        severity=Severity.ERROR,
        summary="torch.load refuses this file, for the reason given.",
        explanation=(
            "ppaux reads the archive's records as torch 2.13's reader does. This one holds "
            "something torch.load stops at before it unpickles anything: a version record torch "
            "cannot parse or does not support, a byteorder record other than 'little' or "
            "'big', a storage alignment record that is not a number; or something it stops at "
            "while unpickling: a storage record missing, or shorter or longer than its storage "
            "(the finding names the entry that uses it), or a numpy array or dtype numpy "
            "refuses to make (a dtype spec it does not understand, a byte order of other than "
            "one character), wherever it sits, the finding naming the key that holds it. "
            "Whatever the pickle holds, "
            "rank 0 never saw this dict: the file is not what the failing deployment sent."
        ),
        causes=(
            "The file was assembled, repaired or edited by a tool other than torch.save.",
            "Where its version record is past 10: it was written by a newer torch than the one "
            "reading it.",
            "Where torch.load fails setting a tensor's field: torch.save wrote it as it was, a "
            "tensor whose __dict__ holds a field torch.load cannot set (a read-only one, such as "
            "is_leaf or grad_fn). Each finding lists only the causes that can be true of it.",
        ),
        fix="Capture the dict again with the torch of the deployment; do not edit the archive.",
        example="its version is 11, past the newest torch 2.13 reads (10)",
        area="payload",
    ),
    Rule(
        code="PP118",
        name="not-as-torch-save-writes",
        severity=Severity.WARNING,
        summary="The file is not as torch.save (or pickle.dump) writes it.",
        explanation=(
            "ppaux describes a file as clean only when every byte is one its writer could have "
            "written: torch.save's zip (its records in its order, each stored, aligned to 64 "
            "bytes, with its headers and end records) around a pickle of its pickle_protocol (2 "
            "unless given; 1 to 5 are modelled, 0 is not) as CPython's pickler writes it (its "
            "opcodes, memo indexes in order, ints in their shortest form, each container filled "
            "right after it is made, storage keys '0', '1', ... in order of first use), or a "
            "pickle as pickle.dump writes it at protocol 2 to 5. The finding names the first "
            "place the file leaves that model. It is an error where torch's reading could differ "
            "from ppaux's or torch may refuse the file (an opcode the pickler never writes, a "
            "memo index out of order, a FRAME whose length lies, a record torch.save does not "
            "write), a warning where torch reads the same values (an int in a longer form, a "
            "header's padding)."
        ),
        causes=(
            "The file was assembled, repaired or edited by a tool other than torch.save.",
            "A file crafted so that readers disagree about what it holds.",
        ),
        fix="Capture the dict again with torch.save; do not trust a description of an edited file.",
        example="data.pkl byte 105 (BININT2): int not in its shortest form",
        area="payload",
    ),
    Rule(
        code="PP119",
        name="weights-only-refuses",
        severity=Severity.WARNING,
        summary="torch.load's default (weights_only=True) refuses the file.",
        explanation=(
            "Since torch 2.6, torch.load reads with its weights-only unpickler unless told "
            "weights_only=False. That reader runs only the opcodes torch.save's protocol-2 "
            "pickles of tensors need (no LONG4, no POP, no protocol-4 opcode), resolves only "
            "its allowlist of globals (tensor rebuild functions, dtypes, storages, "
            "OrderedDict, Counter, set, complex, bytearray, _codecs.encode; no numpy, no "
            "frozenset, no empty bytes), and builds, appends or sets items only into the types "
            "it knows. torch.save writes such files without complaint (an int of 256 bytes or "
            "more, a numpy array, a frozenset in the dict), and the receiving side fails with "
            "'Weights only load failed'. ppaux checks the pickle against torch 2.13.0's "
            "allowlist, without torch, and names the first byte the reader stops at. Clean "
            "speaks for torch.load's default: a file it refuses is never clean. "
            "torch.load(weights_only=False) would read it, but that loader runs any code the "
            "file names."
        ),
        causes=(
            "The dict holds a value the weights-only reader has no allowlist entry for: a numpy "
            "array or scalar, a frozenset, empty bytes, an int of more than 255 bytes, a "
            "custom class.",
            "The file was written by a tool other than torch.save (another pickle protocol, "
            "opcodes torch.save never writes).",
        ),
        fix=(
            "Keep tensors and plain containers in the dict (torch.from_numpy(a) for an array, a "
            "tuple for a frozenset), or allowlist the global with "
            "torch.serialization.add_safe_globals on the loading side when the file is trusted."
        ),
        kind_fixes=(
            (
                "protocol",
                "Save with torch.save's default protocol: leave pickle_protocol out (it writes "
                "protocol 2, which the weights-only reader runs).",
            ),
        ),
        example=(
            "torch.load's default (weights_only=True) refuses this file: data.pkl byte 13: "
            "opcode 0x8b (LONG4) is not one it runs; torch.load(weights_only=False) would read "
            "it, but that loader runs code from any file"
        ),
        area="payload",
    ),
)
