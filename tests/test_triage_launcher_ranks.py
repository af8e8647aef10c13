"""The local rank a launcher's line names: DeepSpeed's ``--local_rank`` only where it is an
argument of its own in the command it echoes, torchrun's agent's only up to six digits; and a
process's failure written many times is one process among the root's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths

_DS = (
    "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/usr/bin/python3', "
    "'-u', 'train.py', {args}] exits with return code = -9\n"
)


def _findings(tmp_path, text):
    log = tmp_path / "x.log"
    log.write_text(text)
    report = triage_paths([str(log)])
    assert not report.problems
    return report


def _root(report):
    (root,) = [f for f in report.findings if f.code in ("PP801", "PP802", "PP809")]
    return root


def test_a_local_rank_inside_another_argument_is_not_the_childs(tmp_path):
    args = "'--run_name=--local_rank=7', '--local_rank=2'"
    root = _root(_findings(tmp_path, _DS.format(args=args)))
    assert root.message.startswith("no root in this log: local_rank 2 died: killed by SIGKILL")


def test_a_local_rank_given_as_two_arguments_is_read(tmp_path):
    root = _root(_findings(tmp_path, _DS.format(args="'--local_rank', '5'")))
    assert root.message.startswith("no root in this log: local_rank 5 died: ")


def test_a_command_whose_only_local_rank_is_inside_an_argument_names_the_child(tmp_path):
    args = "'--note=x --local_rank=7'"
    root = _root(_findings(tmp_path, _DS.format(args=args)))
    assert root.message.startswith("no root in this log: the launcher's child died: ")


def test_torch_s_hyphened_local_rank_is_read(tmp_path):
    root = _root(_findings(tmp_path, _DS.format(args="'--local-rank=3'")))
    assert root.message.startswith("no root in this log: local_rank 3 died: killed by SIGKILL")


def test_the_return_code_is_the_one_after_the_list_not_one_inside_an_argument(tmp_path):
    line = (
        "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/usr/bin/python3', "
        "'-u', 'train.py', '--local_rank=1', '--note=] exits with return code = -9'] exits with "
        "return code = 1\n"
    )
    root = _root(_findings(tmp_path, line))
    assert root.message.startswith("no root in this log: local_rank 1 died: exited with status 1")


def test_a_seven_digit_local_rank_is_no_rank(tmp_path):
    text = (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: "
        "9999999 (pid: 12) of binary: /usr/bin/python3\n"
    )
    report = _findings(tmp_path, text)
    root = _root(report)
    assert "9999999" not in root.message
    assert "torchrun's child exited with code 1" in root.message
    assert "PP811" in [f.code for f in report.findings]


@settings(max_examples=10, deadline=None)
@given(times=st.integers(2, 40))
def test_one_process_written_many_times_is_one_rank_of_the_root(tmp_path_factory, times):
    line = (
        "(EngineCore pid=100) ERROR 07-15 21:01:01 [core.py:1240] RuntimeError: shapes cannot be "
        "multiplied (4x8 and 9x8)\n"
    )
    report = _findings(tmp_path_factory.mktemp("many"), line * times)
    root = _root(report)
    assert root.extra["ranks"] == ["EngineCore pid=100"]
    assert len(root.extra["records"]) == times
    assert f"({times} records of it at the same moment)" in root.message
    assert report.data["incidents"][0]["ranks"] == ["EngineCore pid=100"]
