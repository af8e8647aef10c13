"""DeepSpeed's launcher's record of the child that ended first: an exit status of its own is
an ordinary failure (its own output holds the error), not a kill; a line cut before its return
code still names that child, never a sibling the launcher killed after it."""

from __future__ import annotations

from pathlib import Path

from ppaux.triage import triage_paths

_KILLS = (
    "[2023-07-20 15:45:13,980] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3966\n"
    "[2023-07-20 15:45:13,981] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3967\n"
)


def _report(tmp_path: Path, text: str):
    path = tmp_path / "ds.log"
    path.write_text(text, encoding="utf-8")
    report = triage_paths([str(path)])
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    comments = " ".join(s["comment"] for s in report.data["steps"])
    return root, [s["argv"] for s in report.data["steps"]], " ".join(comments.split())


def test_an_exit_status_of_one_gets_no_oom_killer_steps(tmp_path):
    line = (
        "[2023-07-20 15:45:13,982] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', "
        "'-u', 'main.py', '--local_rank=4'] exits with return code = 1\n"
    )
    root, argvs, comments = _report(tmp_path, _KILLS + line)
    assert root.key != "subprocess 3966"
    assert "local_rank 4 died: exited with status 1 (DeepSpeed's launcher)" in root.message
    assert "an error of its own, not a kill" in " ".join(root.message.split())
    assert ["journalctl", "-k", "-g", "Killed process|Out of memory"] not in argvs
    assert ["free", "-g"] not in argvs
    assert "its own output holds the error" in comments


def test_a_line_cut_before_its_return_code_names_the_failing_child(tmp_path):
    cut = (
        "[2023-07-20 15:45:13,982] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', "
        "'-u', 'main.py', '--local_rank=1', '--deepspeed', 'deepspeed.json', '--train_file', "
        "'AdvertiseGen/train.json', '--response_column\n"
    )
    root, _, _ = _report(tmp_path, _KILLS + cut)
    assert root.code == "PP809"
    said = " ".join(root.message.split())
    assert said.startswith(
        "no root in this log: local_rank 1 died: the line that gives its return code is cut"
    )
    assert ":3)" in said  # the cut line, the third of the log
