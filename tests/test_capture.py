"""ppaux capture through install()/uninstall() on a module tree shaped like sglang's.

The tree (tests/sglang_shaped.py) is written into each test's directory and imported for real:
the transport module and a scheduler-like module that imports both functions by name. The
plugin form and the cross-process cases run in child processes (test_capture_plugin.py).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import sglang_shaped
import torch

from ppaux import capture
from ppaux.capture import directory as capture_store
from ppaux.capture import hooks
from ppaux.dump.capture_format import CAPTURE_MARKER, META_FIELDS
from ppaux.sglang import TRANSPORT_MODULE

pytestmark = pytest.mark.torch

P = "__sampling_observer_output__."
NON_TENSOR = "received a non-tensor auxiliary PP output"
POP = "pop_auxiliary_output_from_pp_tensors"
ADD = "add_auxiliary_output_to_pp_tensors"


class Observer:
    """A PP-capable sampling observer."""

    def from_pp_tensors(self, tensors: dict) -> dict:
        return dict(tensors)


class FailingObserver:
    """An observer whose rebuild raises an error of its own; keeps the exception it raised."""

    def __init__(self) -> None:
        self.raised: BaseException | None = None

    def from_pp_tensors(self, tensors: dict) -> Any:
        self.raised = KeyError("scores")
        raise self.raised


class Output:
    """An auxiliary output whose to_pp_tensors() returns the mapping it was given."""

    def __init__(self, tensors: Any) -> None:
        self.tensors = tensors

    def to_pp_tensors(self) -> Any:
        return self.tensors


def message() -> dict:
    """An output message as the last stage sends it (tensor, list and plain values)."""
    return {
        "next_token_ids": torch.arange(4),
        "output_token_logprobs_val": [0.5, 0.25, 0.125, 0.0625],
        "__msg_type__": "output",
    }


def leaked_message() -> dict:
    """An output message in which out-of-tree code put a list under an auxiliary key."""
    tensors = message()
    tensors[P + "scores"] = [0.1, 0.7]
    return tensors


def captures(directory: Path) -> list[Path]:
    return sorted(directory.glob("capture-*.pt"))


def load(path: Path) -> dict:
    # weights_only: a capture holds only dicts, lists, strings, numbers and tensors
    return torch.load(path, weights_only=True)


def same_items(a: dict, b: dict) -> bool:
    """Same keys in the same order and the very same value objects."""
    return list(a) == list(b) and all(a[k] is b[k] for k in a)


# -- the failing call -------------------------------------------------------------------------


def test_non_tensor_leak_raises_unchanged_and_leaves_one_capture(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    capture.install(directory)
    # imported after install(): the transport is patched the moment it loads
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    tensors = leaked_message()
    before = dict(tensors)
    with pytest.raises(RuntimeError) as caught:
        mixin.receive_output_message(tensors, Observer())
    assert caught.value.args == (NON_TENSOR,)
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert same_items(tensors, before)  # the host's dict is untouched

    [path] = captures(directory)
    assert sorted(p.name for p in directory.iterdir()) == sorted([path.name, ".ppaux-capture.lock"])
    saved = load(path)
    assert set(saved) == {CAPTURE_MARKER, "meta", "tensors", "output"}
    assert saved[CAPTURE_MARKER] == 1
    meta = saved["meta"]
    assert list(meta) == list(META_FIELDS)
    assert meta["function"] == POP
    assert (meta["exception_type"], meta["exception_message"]) == ("RuntimeError", NON_TENSOR)
    assert meta["sglang_version"] == "0.5.23"  # read from the tree's _version.py
    assert meta["torch_version"] == str(torch.__version__)
    assert type(meta["torch_version"]) is str
    assert (meta["host"], meta["pid"], meta["when"]) == (socket.gethostname(), os.getpid(), "error")
    assert (meta["pp_rank"], meta["pp_size"]) == (None, None)
    assert list(saved["tensors"]) == list(before)
    assert torch.equal(saved["tensors"]["next_token_ids"], before["next_token_ids"])
    assert saved["tensors"][P + "scores"] == [0.1, 0.7]
    assert saved["tensors"]["__msg_type__"] == "output"
    assert saved["output"] is None
    host = re.sub(r"[^A-Za-z0-9._-]+", "_", socket.gethostname())
    name = rf"capture-\d{{8}}T\d{{6}}Z-{re.escape(host)}-{os.getpid()}-\d{{4}}-pop\.pt"
    assert re.fullmatch(name, path.name)
    assert capture.stats() == capture.CaptureStats(1, 0, 0, str(path))


def test_capture_is_flagged_by_inspect_and_reproduced_by_replay(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    capture.install(directory)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    with pytest.raises(RuntimeError):
        mixin.receive_output_message(leaked_message(), Observer())
    [path] = captures(directory)
    done = subprocess.run(
        [sys.executable, "-m", "ppaux_cli", "inspect", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert [(f["code"], f["key"]) for f in findings] == [("PP101", P + "scores")]
    assert findings[0]["sglang_error"] == NON_TENSOR
    # replay: the last stage wrote the key unchecked (a validating sender would refuse it)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppaux_cli",
            "replay",
            "--sender",
            "legacy",
            "--format",
            "json",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert [(f["code"], f["message"]) for f in findings] == [
        ("PP401", f"pop on rank 0 raises RuntimeError: {NON_TENSOR}")
    ]


def test_observer_error_is_the_same_object(tree: Path, tmp_path: Path):
    capture.install(tmp_path / "captures")
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    observer = FailingObserver()
    tensors = message()
    tensors[P + "scores"] = torch.zeros(2)
    with pytest.raises(KeyError) as caught:
        mixin.receive_output_message(tensors, observer)
    assert caught.value is observer.raised
    [path] = captures(tmp_path / "captures")
    meta = load(path)["meta"]
    assert (meta["exception_type"], meta["exception_message"]) == ("KeyError", "'scores'")


def test_add_failure_records_the_dict_as_it_was_and_the_output(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    capture.install(directory)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    good = torch.ones(2)
    output = Output({"good": good, "bad": [1, 2]})
    tensors = message()
    before = dict(tensors)
    with pytest.raises(RuntimeError) as caught:
        mixin.prepare_output_message(tensors, output)
    assert caught.value.args == ("auxiliary PP output 'bad' is not a tensor",)
    # add inserts entry by entry; the capture does not undo what the host's add did
    assert list(tensors) == [*before, P + "good"]
    assert tensors[P + "good"] is good
    [path] = captures(directory)
    saved = load(path)
    assert saved["meta"]["function"] == ADD
    assert list(saved["tensors"]) == list(before)  # the dict as it was at the call
    assert list(saved["output"]) == ["good", "bad"]
    assert torch.equal(saved["output"]["good"], good)
    assert saved["output"]["bad"] == [1, 2]


def test_add_called_with_keywords(tree: Path, tmp_path: Path):
    capture.install(tmp_path / "captures")
    import sglang.srt.sampling.sampling_observer_pp as transport_module

    tensors = message()
    with pytest.raises(RuntimeError) as caught:
        transport_module.add_auxiliary_output_to_pp_tensors(tensors=tensors, output=object())
    assert caught.value.args == ("auxiliary output does not support pipeline-parallel transport",)
    [path] = captures(tmp_path / "captures")
    saved = load(path)
    assert list(saved["tensors"]) == list(message())
    assert saved["output"] is None  # the output has no to_pp_tensors


def test_healthy_calls_write_nothing_and_return_the_same(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    capture.install(directory)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    tensors = message()
    scores = torch.rand(4)
    assert mixin.prepare_output_message(tensors, Output({"scores": scores})) is tensors
    assert tensors[P + "scores"] is scores
    rebuilt = mixin.receive_output_message(tensors, Observer())
    assert rebuilt == {"scores": scores}
    assert list(tensors) == list(message())
    assert mixin.receive_output_message(message(), None) is None
    unchanged = message()
    assert mixin.prepare_output_message(unchanged, None) is unchanged
    assert list(unchanged) == list(message())
    assert not directory.exists() or captures(directory) == []
    assert capture.stats() == capture.CaptureStats(0, 0, 0, None)


def test_unpicklable_values_are_saved_as_their_repr(tree: Path, tmp_path: Path):
    capture.install(tmp_path / "captures")
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    def local_function() -> None:
        """Cannot be pickled: a local function."""

    with pytest.raises(RuntimeError) as caught:
        mixin.prepare_output_message(message(), Output({"f": local_function}))
    assert caught.value.args == ("auxiliary PP output 'f' is not a tensor",)
    [path] = captures(tmp_path / "captures")
    saved = load(path)
    assert saved["output"]["f"].startswith("<not picklable function: <function ")
    assert list(saved["tensors"]) == list(message())


# -- installing and uninstalling -------------------------------------------------------------


def test_install_after_by_name_imports_rebinds_and_uninstall_restores(tree: Path, tmp_path: Path):
    import sglang.srt.sampling.sampling_observer_pp as transport_module
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    original_add = transport_module.add_auxiliary_output_to_pp_tensors
    original_pop = transport_module.pop_auxiliary_output_from_pp_tensors
    capture.install(tmp_path / "captures")
    for module in (mixin, transport_module):
        assert module.add_auxiliary_output_to_pp_tensors is not original_add
        assert module.pop_auxiliary_output_from_pp_tensors is not original_pop
        assert module.pop_auxiliary_output_from_pp_tensors.__wrapped__ is original_pop
        assert module.pop_auxiliary_output_from_pp_tensors.__name__ == POP
    wrapped = mixin.pop_auxiliary_output_from_pp_tensors
    capture.install(tmp_path / "other", when="always")  # settings change, patches stay
    assert mixin.pop_auxiliary_output_from_pp_tensors is wrapped
    assert capture.active_config() == capture.CaptureConfig(tmp_path / "other", when="always")

    capture.uninstall()
    for module in (mixin, transport_module):
        assert module.add_auxiliary_output_to_pp_tensors is original_add
        assert module.pop_auxiliary_output_from_pp_tensors is original_pop
    assert capture.active_config() is None
    with pytest.raises(RuntimeError):
        mixin.receive_output_message(leaked_message(), Observer())
    assert not (tmp_path / "captures").exists() and not (tmp_path / "other").exists()


def test_uninstall_before_the_module_loads_leaves_it_alone(tree: Path, tmp_path: Path):
    capture.install(tmp_path / "captures")
    capture.uninstall()
    assert not any(type(f).__name__ == "_ModuleWatcher" for f in sys.meta_path)
    import sglang.srt.sampling.sampling_observer_pp as transport_module

    assert not hasattr(transport_module.pop_auxiliary_output_from_pp_tensors, "__wrapped__")


def test_reimport_is_patched_again(tree: Path, tmp_path: Path):
    capture.install(tmp_path / "captures")
    import sglang.srt.sampling.sampling_observer_pp as first

    sglang_shaped.forget()
    import sglang.srt.sampling.sampling_observer_pp as second

    assert second is not first
    assert second.pop_auxiliary_output_from_pp_tensors.__wrapped__ is not None
    with pytest.raises(RuntimeError):
        second.pop_auxiliary_output_from_pp_tensors(leaked_message(), Observer())
    assert len(captures(tmp_path / "captures")) == 1


def test_a_host_without_the_transport_is_left_alone(tmp_path: Path, monkeypatch):
    # sglang 0.5.18 and older: no sampling_observer_pp; install() waits, nothing breaks
    root = tmp_path / "site"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(root))
    sglang_shaped.forget()
    try:
        capture.install(tmp_path / "captures")
        with pytest.raises(ModuleNotFoundError):
            __import__(TRANSPORT_MODULE)
    finally:
        capture.uninstall()
        sglang_shaped.forget()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"when": "sometimes"}, "when must be 'error' or 'always', not 'sometimes'"),
        ({"max_files": 0}, "max_files must be a whole number of at least 1, not 0"),
        ({"max_bytes": 1.5}, "max_bytes must be a whole number of at least 1, not 1.5"),
        ({"sample_every": True}, "sample_every must be a whole number of at least 1, not True"),
    ],
)
def test_install_refuses_bad_settings(tmp_path: Path, kwargs: dict, message: str):
    with pytest.raises(ValueError) as caught:
        capture.install(tmp_path, **kwargs)
    assert str(caught.value) == message
    assert capture.active_config() is None


def test_install_refuses_an_empty_directory():
    with pytest.raises(ValueError) as caught:
        capture.install("")
    assert str(caught.value) == "the capture directory must not be empty"


# -- bounds -----------------------------------------------------------------------------------


def test_max_files_keeps_the_first_and_counts_the_rest(tree: Path, tmp_path: Path, caplog):
    directory = tmp_path / "captures"
    capture.install(directory, max_files=2)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    with caplog.at_level(logging.WARNING, logger="ppaux.capture"):
        for call in range(5):
            tensors = leaked_message()
            tensors["next_token_ids"] = torch.full((4,), call)
            with pytest.raises(RuntimeError, match=NON_TENSOR):
                mixin.receive_output_message(tensors, Observer())
    kept = captures(directory)
    # the first two calls are kept
    assert [load(p)["tensors"]["next_token_ids"].tolist() for p in kept] == [[0] * 4, [1] * 4]
    assert capture_store.read_skipped(directory) == 3
    assert capture.stats().written == 2 and capture.stats().skipped == 3
    assert [r.getMessage() for r in caplog.records] == [
        f"ppaux capture: {directory} is full (max_files=2, max_bytes=1073741824); further "
        "captures are skipped and counted"
    ]


def test_max_bytes_counts_bytes_on_disk(tree: Path, tmp_path: Path):
    probe = tmp_path / "probe"
    capture.install(probe)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    with pytest.raises(RuntimeError):
        mixin.receive_output_message(leaked_message(), Observer())
    size = captures(probe)[0].stat().st_size
    directory = tmp_path / "captures"
    capture.install(directory, max_bytes=2 * size + size // 2)
    for _ in range(4):
        with pytest.raises(RuntimeError):
            mixin.receive_output_message(leaked_message(), Observer())
    usage = capture_store.usage(directory)
    assert (usage.files, usage.bytes) == (2, 2 * size)
    assert capture_store.read_skipped(directory) == 2
    assert not [p for p in directory.iterdir() if p.name.startswith(capture_store.TEMP_PREFIX)]


def test_a_capture_larger_than_max_bytes_is_skipped(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    capture.install(directory, max_bytes=100)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    with pytest.raises(RuntimeError):
        mixin.receive_output_message(leaked_message(), Observer())
    assert captures(directory) == []
    assert capture_store.read_skipped(directory) == 1
    assert sorted(p.name for p in directory.iterdir()) == [
        ".ppaux-capture.lock",
        ".ppaux-capture.skipped",
    ]


# -- the capture's own failures ---------------------------------------------------------------


@pytest.fixture
def read_only_dir(tmp_path: Path):
    """A directory this process cannot write, even as root (then with the immutable flag)."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o555)
    immutable = False
    if os.access(directory, os.W_OK):  # root: permissions do not stop it
        done = subprocess.run(["chattr", "+i", str(directory)], capture_output=True, check=False)
        immutable = done.returncode == 0
        probe = directory / "probe"
        try:
            probe.touch()
        except OSError:
            pass
        else:
            probe.unlink()
            if immutable:
                subprocess.run(["chattr", "-i", str(directory)], check=False)
            pytest.skip("cannot make a read-only directory here (root without chattr)")
    yield directory
    if immutable:
        subprocess.run(["chattr", "-i", str(directory)], check=False)
    directory.chmod(0o755)


def test_read_only_directory_leaves_the_error_and_logs_one_warning(
    tree: Path, read_only_dir: Path, caplog
):
    capture.install(read_only_dir)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    with caplog.at_level(logging.DEBUG, logger="ppaux.capture"):
        for _ in range(3):
            tensors = leaked_message()
            before = dict(tensors)
            with pytest.raises(RuntimeError) as caught:
                mixin.receive_output_message(tensors, Observer())
            assert caught.value.args == (NON_TENSOR,)
            assert caught.value.__context__ is None
            assert same_items(tensors, before)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert (
        warnings[0]
        .getMessage()
        .startswith(
            f"ppaux capture: could not write a capture to {read_only_dir}: PermissionError: "
        )
    )
    assert (
        warnings[0]
        .getMessage()
        .endswith("(the host's own error is unchanged; later capture failures are not logged)")
    )
    assert list(read_only_dir.iterdir()) == []
    assert capture.stats() == capture.CaptureStats(0, 0, 3, None)


def test_directory_under_a_file_leaves_the_error_and_logs_one_warning(
    tree: Path, tmp_path: Path, caplog
):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    capture.install(blocker / "captures")
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    with caplog.at_level(logging.WARNING, logger="ppaux.capture"):
        for _ in range(2):
            with pytest.raises(RuntimeError) as caught:
                mixin.receive_output_message(leaked_message(), Observer())
            assert caught.value.args == (NON_TENSOR,)
    assert [r.getMessage() for r in caplog.records] == [
        f"ppaux capture: could not write a capture to {blocker / 'captures'}: NotADirectoryError: "
        f"[Errno 20] Not a directory: '{blocker / 'captures'}' (the host's own error is "
        "unchanged; later capture failures are not logged)"
    ]


# -- concurrency ------------------------------------------------------------------------------


def test_threads_share_one_directory_within_the_bounds(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    capture.install(directory, max_files=20)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    errors: list[str] = []
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        for _ in range(5):
            try:
                mixin.receive_output_message(leaked_message(), Observer())
            except RuntimeError as exc:
                errors.append(str(exc))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [NON_TENSOR] * 40
    kept = captures(directory)
    assert len(kept) == 20
    assert capture_store.read_skipped(directory) == 20
    assert len({p.name for p in kept}) == 20
    assert not [p for p in directory.iterdir() if p.name.startswith(capture_store.TEMP_PREFIX)]
    for path in kept:
        assert load(path)["tensors"][P + "scores"] == [0.1, 0.7]


_PROCESS = """
import sys
sys.path.insert(0, {root!r})
from ppaux import capture
from ppaux.capture import hooks
capture.install({directory!r}, max_files={max_files})
from sglang.srt.managers import scheduler_pp_mixin as mixin
import torch

class Observer:
    def from_pp_tensors(self, tensors):
        return dict(tensors)

sys.stdin.readline()  # both processes start failing together
raised = 0
for _ in range({calls}):
    tensors = {{"next_token_ids": torch.arange(4), "__sampling_observer_output__.scores": [0.1]}}
    try:
        mixin.receive_output_message(tensors, Observer())
    except RuntimeError as exc:
        assert str(exc) == "received a non-tensor auxiliary PP output"
        raised += 1
print(raised, capture.stats().written, capture.stats().skipped, capture.stats().failed)
"""


def test_two_processes_share_one_directory_within_the_bounds(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    script = _PROCESS.format(root=str(tree), directory=str(directory), max_files=12, calls=10)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    results = []
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        results.append([int(x) for x in out.split()])
    assert [r[0] for r in results] == [10, 10]
    assert sum(r[1] for r in results) == 12
    assert sum(r[2] for r in results) == 8
    assert [r[3] for r in results] == [0, 0]
    assert len(captures(directory)) == 12
    assert capture_store.read_skipped(directory) == 8
    assert not [p for p in directory.iterdir() if p.name.startswith(capture_store.TEMP_PREFIX)]


# -- when="always" ----------------------------------------------------------------------------


def test_always_records_every_nth_healthy_call_as_it_came(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    capture.install(directory, when="always", sample_every=3)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    scores = torch.rand(4)
    for _ in range(6):
        tensors = mixin.prepare_output_message(message(), Output({"scores": scores}))
        mixin.receive_output_message(tensors, Observer())
    kept = captures(directory)
    assert [p.name.rsplit("-", 1)[-1] for p in kept] == ["add.pt", "pop.pt", "add.pt", "pop.pt"]
    for path in kept:
        saved = load(path)
        meta = saved["meta"]
        assert (meta["when"], meta["exception_type"], meta["exception_message"]) == (
            "always",
            None,
            None,
        )
        # both ends saw the dict as it was at the call: add before, pop with the aux key
        if meta["function"] == ADD:
            assert list(saved["tensors"]) == list(message())
            assert list(saved["output"]) == ["scores"]
            assert torch.equal(saved["output"]["scores"], scores)
        else:
            assert list(saved["tensors"]) == [*message(), P + "scores"]
            assert saved["output"] is None


def test_always_still_records_failures_between_samples(tree: Path, tmp_path: Path):
    directory = tmp_path / "captures"
    capture.install(directory, when="always", sample_every=1000)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    mixin.receive_output_message(message(), Observer())  # call 0: sampled, healthy
    with pytest.raises(RuntimeError):
        mixin.receive_output_message(leaked_message(), Observer())  # call 1: not sampled
    metas = [load(p)["meta"] for p in captures(directory)]
    assert [(m["exception_message"], m["when"]) for m in metas] == [
        (None, "always"),
        (NON_TENSOR, "always"),
    ]


# -- configuration from the environment ------------------------------------------------------


def test_config_from_env_defaults_and_values(tmp_path: Path):
    assert capture.config_from_env({}) is None
    assert capture.config_from_env({"PPAUX_CAPTURE_DIR": "  "}) is None
    assert capture.config_from_env({"PPAUX_CAPTURE_DIR": str(tmp_path)}) == capture.CaptureConfig(
        tmp_path, "error", 100, 1 << 30, 1
    )
    assert capture.config_from_env(
        {
            "PPAUX_CAPTURE_DIR": str(tmp_path),
            "PPAUX_CAPTURE_WHEN": "always",
            "PPAUX_CAPTURE_MAX_FILES": "7",
            "PPAUX_CAPTURE_MAX_BYTES": "64M",
            "PPAUX_CAPTURE_SAMPLE_EVERY": "10",
        }
    ) == capture.CaptureConfig(tmp_path, "always", 7, 64 << 20, 10)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("PPAUX_CAPTURE_WHEN", "never", "PPAUX_CAPTURE_WHEN='never': must be 'error' or 'always'"),
        ("PPAUX_CAPTURE_MAX_FILES", "ten", "PPAUX_CAPTURE_MAX_FILES='ten': not a whole number"),
        ("PPAUX_CAPTURE_MAX_FILES", "0", "PPAUX_CAPTURE_MAX_FILES='0': must be at least 1"),
        (
            "PPAUX_CAPTURE_MAX_BYTES",
            "lots",
            "PPAUX_CAPTURE_MAX_BYTES='lots': not a size such as 1073741824, 512M or 1G",
        ),
        ("PPAUX_CAPTURE_SAMPLE_EVERY", "-1", "PPAUX_CAPTURE_SAMPLE_EVERY='-1': must be at least 1"),
        (
            "PPAUX_CAPTURE_SAMPLE_EVERY",
            "1.5",
            "PPAUX_CAPTURE_SAMPLE_EVERY='1.5': not a whole number",
        ),
    ],
)
def test_config_from_env_errors(tmp_path: Path, name: str, value: str, message: str):
    with pytest.raises(ValueError) as caught:
        capture.config_from_env({"PPAUX_CAPTURE_DIR": str(tmp_path), name: value})
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1073741824", 1 << 30),
        ("64M", 64 << 20),
        ("64MiB", 64 << 20),
        ("64mb", 64 << 20),
        ("1G", 1 << 30),
        ("2k", 2048),
        ("1T", 1 << 40),
        (" 5 ", 5),
    ],
)
def test_parse_size(text: str, size: int):
    assert capture.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "1.5G", "-1", "1X", "G1"])
def test_parse_size_refuses(text: str):
    with pytest.raises(ValueError) as caught:
        capture.parse_size(text)
    assert str(caught.value) == f"{text.strip()!r} is not a size such as 1073741824, 512M or 1G"


# -- CUDA ---------------------------------------------------------------------------------------


@pytest.mark.cuda
def test_cuda_tensors_keep_their_device(tree: Path, tmp_path: Path):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    directory = tmp_path / "captures"
    capture.install(directory)
    from sglang.srt.managers import scheduler_pp_mixin as mixin

    tensors = leaked_message()
    tensors["next_token_ids"] = torch.arange(4, device="cuda:0")
    with pytest.raises(RuntimeError):
        mixin.receive_output_message(tensors, Observer())
    [path] = captures(directory)
    saved = torch.load(path, weights_only=True)
    assert saved["tensors"]["next_token_ids"].device == torch.device("cuda:0")


# -- hygiene ----------------------------------------------------------------------------------


def test_importing_the_plugin_and_capture_modules_does_not_import_torch():
    code = (
        "import sys, ppaux.capture.plugin, ppaux.capture.hooks, ppaux.capture.reports; "
        "print('torch' in sys.modules, 'sglang' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_capture_original_recognises_both_kinds_of_wrapper(tree: Path, tmp_path: Path):
    import functools

    import sglang.srt.sampling.sampling_observer_pp as transport_module

    original = transport_module.pop_auxiliary_output_from_pp_tensors
    assert capture.capture_original(original) is None
    capture.install(tmp_path / "captures")
    wrapped = transport_module.pop_auxiliary_output_from_pp_tensors
    assert capture.capture_original(wrapped) is original

    def around(original_fn, hook):  # the shape of what sglang's HookRegistry builds (AROUND)
        @functools.wraps(original_fn)
        def wrapper(*args, **kwargs):
            return hook(original_fn, *args, **kwargs)

        return wrapper

    assert capture.capture_original(around(original, hooks.around_pop)) is original
    assert capture.capture_original(around(original, print)) is None
    assert capture.capture_original(functools.wraps(original)(lambda *a: None)) is None
