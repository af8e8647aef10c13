"""The program a log is of is decided from the log's own records (sglang's prefix, its server
arguments' record, its frames, its batches' records), never from the word ``sglang`` in free
text: a training job's prompt that names sglang, or a launch command whose paths or flags do,
keeps the training job's next steps. Every expected value is written by hand.
"""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

#: A training job's out of memory.
_OOM = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/train.py", line 120, in <module>\n'
    "    loss = model(batch)\n"
    '  File "/home/user/model.py", line 44, in forward\n'
    "    h = self.mlp(h)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
)
_PROMPT = (
    "[2024-05-01 10:00:05] sample prompt: how do I serve "
    "with sglang.srt and /opt/sglang on two GPUs?\n"
)
_LAUNCH = (
    "[2024-05-01 10:00:00] cmd = /usr/bin/python3 -u train.py --pipeline-parallel-size 2 "
    "--data /data/sglang/prompts.jsonl\n"
)


def _steps(tmp_path: Path, text: str) -> str:
    log = tmp_path / "train.log"
    log.write_text(text, encoding="utf-8")
    report = triage_paths([str(log)])
    assert not report.problems
    assert [f.code for f in report.findings] == ["PP802"]
    return "\n".join(str(line) for line in report.data["next_steps"])


def test_a_prompt_that_names_sglang_keeps_a_training_jobs_steps(tmp_path):
    text = _steps(tmp_path, _PROMPT + _OOM)
    assert "--mem-fraction-static" not in text
    assert "out of memory in the job (not sglang's server)" in text


def test_a_launch_commands_path_and_flag_keep_a_training_jobs_steps(tmp_path):
    text = _steps(tmp_path, _LAUNCH + _OOM)
    assert "--mem-fraction-static" not in text
    assert "out of memory in the job (not sglang's server)" in text


def test_sglangs_own_batch_record_under_the_bare_prefix_is_sglangs(tmp_path):
    record = (
        "[2024-05-01 10:00:03] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0\n"
    )
    text = _steps(tmp_path, record + _OOM)
    assert "--mem-fraction-static" in text
