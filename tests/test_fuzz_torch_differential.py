"""ppaux's reading against the real torch.load(weights_only=False), in a sandbox.

The harness (``fuzz/torch_differential.py``) varies files torch.save wrote, at the zip level
and the pickle level, reads each with ppaux here and with ``torch.load(weights_only=False)`` in
the sandbox of ``fuzz/torch_sandbox.py`` (a separate process whose audit hook blocks every
global outside torch's rebuilds, every import, process, code object and file write, and
torch.jit.load). torch.load never runs in this process.

The run is seeded and bounded in time: ``PPAUX_TORCH_FUZZ_SECONDS`` (default 40) and
``PPAUX_TORCH_FUZZ_SEED`` (default 1); the same seed gives the same variants. Files the harness
found and that are now read right are kept in ``fixtures/differential/`` and checked first,
every run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers import REPO

pytestmark = pytest.mark.torch

sys.path.insert(0, str(REPO / "fuzz"))
sys.path.insert(0, str(REPO / "fixtures"))

import make_adversarial as corpus  # noqa: E402
import make_differential  # noqa: E402
import torch_differential as harness  # noqa: E402

SECONDS = float(os.environ.get("PPAUX_TORCH_FUZZ_SECONDS", "40"))
SEED = int(os.environ.get("PPAUX_TORCH_FUZZ_SEED", "1"))
KEPT = REPO / "fixtures" / "differential"


def test_the_sandbox_blocks_and_reports_a_payload(sandbox, tmp_path):
    # A live payload (plain pickle runs it: test_adversarial proves so) is stopped before it
    # gets its callable, and the attempt is reported; nothing is created.
    for name in ("exec_os_system_reduce", "exec_subprocess_check_call", "exec_builtins_exec"):
        case = next(c for c in corpus.CASES if c.name == name)
        path = tmp_path / case.filename
        path.write_bytes(case.build(case.name))
        before = set(os.listdir(tmp_path))
        answer = sandbox.load(path)
        assert answer["outcome"] == "blocked", answer
        assert any(g in " ".join(answer["blocked"]) for g in case.globals), answer
        assert set(os.listdir(tmp_path)) == before
        assert not Path(corpus.marker(name)).exists()


def test_the_sandbox_blocks_torchscript(sandbox):
    answer = sandbox.load(corpus.OUT / "zip_torchscript_long_name.pt")
    assert answer["outcome"] == "blocked"
    assert "torch.jit.load" in answer["blocked"][0]


def test_the_sandbox_reads_what_torch_save_wrote(sandbox, tmp_path):
    import torch

    path = tmp_path / "plain.pt"
    value = {"a": torch.arange(3), "b": [torch.ones(2, dtype=torch.float16)], "c": "text"}
    torch.save(value, path)
    answer = sandbox.load(path)
    assert answer["outcome"] == "loaded" and answer["blocked"] == []
    assert answer["value"] == harness.describe(value)  # the same description, computed here
    ours = harness.ppaux_view(str(path))
    assert ours.verdict == "clean" and ours.value == answer["value"]


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in KEPT.glob("*.pt")) if KEPT.is_dir() else [],
)
def test_kept_findings_stay_fixed(name, sandbox):
    path = KEPT / name
    problem = harness.compare(harness.ppaux_view(str(path)), sandbox.load(path))
    assert problem is None, problem


def test_ppaux_never_reads_clean_what_torch_reads_otherwise(sandbox, tmp_path):
    result = harness.run(SECONDS, SEED, tmp_path, sandbox)
    for n, found in enumerate(result.disagreements):
        (tmp_path / f"disagreement_{n}.pt").write_bytes(found.data)
    assert result.disagreements == [], [(d.mutation, d.problem) for d in result.disagreements]
    assert all(count > 0 for count in result.tried.values()), result.tried
    # The harness reaches every verdict: files both read alike, files torch refuses, and
    # files whose load the sandbox had to block.
    assert result.agreed > 0, result
    assert result.outcomes.get("refused", 0) > 0, result.outcomes


def test_the_description_carries_what_inspect_reports_of_a_tensor():
    # Besides dtype, shape, stride, offset and values: the class, the device, requires_grad and
    # which storage a tensor shares, so that a reading that gets one of them wrong is a
    # disagreement.
    import torch

    plain = harness.describe(torch.ones(2))
    assert plain != harness.describe(torch.ones(2).requires_grad_())
    assert plain != harness.describe(torch.nn.Parameter(torch.ones(2), requires_grad=False))
    assert plain != harness.describe(torch.ones(2, device="meta"))
    assert plain[-4:] == ["torch.Tensor", "cpu", False, 0]
    # Two views of one storage read otherwise than two storages of the same values.
    base = torch.arange(4.0)
    shared = harness.describe({"a": base[:2], "b": base[2:]})
    apart = harness.describe({"a": base[:2].clone(), "b": base[2:].clone()})
    assert shared != apart
    assert [entry[1][-1] for entry in shared[1]] == [0, 0]
    assert [entry[1][-1] for entry in apart[1]] == [0, 1]


@pytest.mark.parametrize("name", sorted(make_differential.CASES))
def test_requires_grad_files_are_what_the_script_writes(name):
    value, kind = make_differential.CASES[name]
    assert (KEPT / name).read_bytes() == make_differential._file(value, kind)


@pytest.mark.parametrize(
    ("name", "cls", "requires_grad"),
    [
        ("requires_grad_rebuild_arg.pt", "torch.Tensor", True),
        ("requires_grad_parameter_false.pt", "torch.nn.parameter.Parameter", False),
    ],
)
def test_ppaux_reads_requires_grad_as_torch_sets_it(name, cls, requires_grad, sandbox):
    # torch.load reads the tensor so (the expected values are torch's semantics: the rebuild's
    # argument, a Parameter's own argument); ppaux's reading,
    # rebuilt, says the same, and inspect reports the same requires_grad.
    theirs = sandbox.load(KEPT / name)
    ours = harness.ppaux_view(str(KEPT / name))
    assert theirs["outcome"] == "loaded", theirs
    tensor = theirs["value"][1][0][1]
    assert tensor[-4:-1] == [cls, "cpu", requires_grad]
    # Hand-packed (no memo, not torch.save's records): outside the writer's model, so PP118
    # is the one finding, and the value is still read as torch reads it.
    assert ours.codes == {"PP118"} and ours.value == theirs["value"]
    from ppaux.dump import inspect_paths

    report = inspect_paths([str(KEPT / name)])
    (entry,) = report.data["files"][0]["payloads"][0]["entries"]
    assert entry["requires_grad"] is requires_grad


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("requires_grad_not_a_bool.pt", "requires_grad must be a bool"),
        ("requires_grad_integer_tensor.pt", "floating point and complex dtype"),
        ("requires_grad_parameter_not_a_bool.pt", "must be bool, not int"),
    ],
)
def test_a_requires_grad_torch_refuses_is_pp117(name, reason, sandbox):
    theirs = sandbox.load(KEPT / name)
    assert theirs["outcome"] == "refused" and reason in theirs["error"], theirs
    ours = harness.ppaux_view(str(KEPT / name))
    assert ours.verdict == "refused" and ours.codes == {"PP117"}, ours
    assert "requires_grad" in ours.reason or "require gradients" in ours.reason


def test_build_on_a_tensor_is_refused_as_the_default_loader_refuses_it(sandbox):
    # weights_only=False runs BUILD as Tensor.__setstate__ (requires_grad from the state);
    # torch.load's default, weights_only=True, runs tensor.set_(*state), which refuses a bool.
    # ppaux reports what the default loader does: it refuses the file.
    name = "requires_grad_build_state.pt"
    theirs = sandbox.load(KEPT / name)
    assert theirs["outcome"] == "loaded", theirs
    assert theirs["value"][1][0][1][-4:-1] == ["torch.Tensor", "cpu", True]
    ours = harness.ppaux_view(str(KEPT / name))
    assert ours.verdict == "refused" and ours.codes == {"PP117"}, ours
    assert "set_" in ours.reason
