"""Kinds of failure of a build, a disk or the weights read from the exception's own type and
message form, not from words the message quotes or mentions (:mod:`ppaux.triage.loadkinds`).
The logs are trimmed from hostile and real pastes; the kinds expected are written by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths


def _kind(path: Path) -> str:
    report = triage_paths([str(path)])
    assert not report.problems
    roots = [f for f in report.findings if f.code == "PP802"]
    assert len(roots) == 1
    kind = (roots[0].extra or {})["kind"]
    assert isinstance(kind, str)
    return kind


_HEAD = (
    'Traceback (most recent call last):\n  File "/app/run.py", line 40, in <module>\n    main()\n'
)


@pytest.mark.parametrize(
    ("last", "kind"),
    [
        # a key that quotes the disk's words is no full disk
        (
            "KeyError: \"stop string 'OSError: [Errno 28] No space left on device' not in vocab\"",
            "other",
        ),
        ("OSError: [Errno 28] No space left on device: '/dev/shm/__KMP_REGISTERED_LIB_7'", "disk"),
        # another host's 403 that mentions the Hub in its text is no weights' failure
        (
            "requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: "
            "https://api.example.com/v1/completions (proxy said: see huggingface docs)",
            "other",
        ),
        (
            "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
            "https://huggingface.co/api/models/meta-llama/Llama-3.1-8B",
            "weights",
        ),
        # the model built with another configuration than the checkpoint's: no weights to fetch
        (
            "RuntimeError: Error(s) in loading state_dict for GPT: size mismatch for "
            "lm_head.weight: copying a param with shape torch.Size([50304, 768]) from "
            "checkpoint, the shape in current model is torch.Size([50257, 768]).",
            "configuration",
        ),
        # the build's tool not installed, whatever frames the paste kept
        ("FileNotFoundError: [Errno 2] No such file or directory: 'ninja'", "build"),
    ],
    ids=["quoted-disk", "disk", "other-host-403", "hub-401", "state-dict-size", "no-ninja"],
)
def test_a_kind_is_read_from_the_exception_s_own_form(tmp_path, last, kind):
    log = tmp_path / "load.log"
    log.write_text(_HEAD + last + "\n")
    assert _kind(log) == kind


def test_a_build_whose_ninja_is_missing_is_a_build(tmp_path):
    # trimmed from transformerlab-api#381 (flashinfer's JIT under sglang)
    log = tmp_path / "ninja.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/flashinfer/jit/core.py", line 109, in build\n'
        "    run_ninja(jit_env.FLASHINFER_JIT_DIR, self.ninja_path, verbose)\n"
        '  File "/venv/lib/python3.11/site-packages/flashinfer/jit/cpp_ext.py", line 168, in '
        "run_ninja\n"
        "    subprocess.run(command, cwd=workdir, check=True)\n"
        '  File "/usr/lib/python3.11/subprocess.py", line 548, in run\n'
        "    with Popen(*popenargs, **kwargs) as process:\n"
        '  File "/usr/lib/python3.11/subprocess.py", line 1026, in __init__\n'
        "    self._execute_child(args, executable, preexec_fn, close_fds,\n"
        '  File "/usr/lib/python3.11/subprocess.py", line 1955, in _execute_child\n'
        "    raise child_exception_type(errno_num, err_msg, err_filename)\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'ninja'\n"
    )
    assert _kind(log) == "build"


@settings(max_examples=30, deadline=None)
@given(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="'\"\n\r"),
        max_size=40,
    )
)
def test_the_disk_s_words_quoted_in_a_key_are_never_a_full_disk(tmp_path_factory, words):
    log = tmp_path_factory.mktemp("quoted") / "key.log"
    log.write_text(_HEAD + f"KeyError: \"key 'No space left on device {words}' missing\"\n")
    report = triage_paths([str(log)])
    assert all((f.extra or {}).get("kind") != "disk" for f in report.findings)


_WEIGHTS_CUT = (
    "[2026-03-01 10:00:02 PP0 TP0] Scheduler hit an exception: Traceback (most recent call "
    "last):\n"
    '  File "/sgl/python/sglang/srt/model_loader/weight_utils.py", line 450, in '
    "safetensors_weights_iterator\n"
    '    with safe_open(st_file, framework="pt") as f:\n'
    "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge\n"
)


def _lines(path: Path) -> list[str]:
    report = triage_paths([str(path)])
    steps = report.data["steps"]
    assert isinstance(steps, list)
    return [" ".join(s["argv"]) for s in steps if s["argv"]]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            "/models/Llama 3",
            ["ls -l /models/Llama 3", "hf download MODEL --local-dir /models/Llama 3"],
        ),
        ("meta-llama/Llama-3.1-8B", ["ls -l MODEL_DIR", "hf download meta-llama/Llama-3.1-8B"]),
        ("bad\u202emodel", ["ls -l MODEL_DIR", "hf download MODEL"]),
    ],
    ids=["path", "hub-name", "unprintable"],
)
def test_weights_steps_name_the_model_the_server_arguments_name(tmp_path, model, expected):
    log = tmp_path / "weights.log"
    log.write_text(
        f"[2026-03-01 10:00:00 PP0 TP0] server_args=ServerArgs(model_path='{model}', pp_size=2)\n"
        + _WEIGHTS_CUT
    )
    lines = _lines(log)
    assert all(line in lines for line in expected), lines
    assert not any(line.startswith("huggingface-cli") for line in lines)
