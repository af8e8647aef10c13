"""Next steps are argument vectors: rendered with shlex.join, they give back their argv through
shlex.split, and no text taken from a log becomes an option."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.steps import Deployment, next_steps, render

_DEPLOYMENTS = st.builds(
    Deployment,
    pp_size=st.one_of(st.none(), st.integers(1, 40)),
    highest_stage=st.one_of(st.none(), st.integers(0, 40)),
    single_launch=st.booleans(),
    runtime=st.sampled_from(["shell", "kubernetes", "docker"]),
    model=st.one_of(st.none(), st.text(max_size=40)),
    sglang=st.booleans(),
)


#: The words of the steps that take nothing from the log.
_FIXED_WORDS = frozenset(
    word
    for step in next_steps(
        [(k, None) for k in ("communication-init", "memory", "shape-kernel")], Deployment(), [], []
    )
    if step.argv is not None and step.argv[0] != "ppaux"
    for word in step.argv
)


@settings(max_examples=300, deadline=None)
@given(
    directory=st.text(min_size=1, max_size=60),
    observer=st.text(min_size=1, max_size=60),
    deployment=_DEPLOYMENTS,
    kinds=st.lists(
        st.sampled_from(
            [
                "auxiliary-output",
                "communication",
                "communication-init",
                "memory",
                "shape-kernel",
                "other",
                "unknown",
            ]
        ),
        max_size=4,
    ),
)
def test_every_step_round_trips_and_no_log_text_becomes_an_option(
    directory, observer, deployment, kinds
):
    steps = next_steps(
        [(k, None) for k in kinds], deployment, [(directory, False)], [observer], None, None
    )
    for step in steps:
        line = render(step)
        assert "\n" not in line and "\r" not in line
        if step.argv is None:
            assert line.startswith("#")
            continue
        command = line.split("  # ", 1)[0] if step.comment else line
        assert shlex.split(command) == list(step.argv)
        for logged in (directory, observer):
            if step.argv[0] != "ppaux":
                # Steps that are no ppaux command hold nothing from the log ('nvidia-smi topo
                # -m'); a text that happens to equal one of their words is no operand.
                assert logged not in step.argv[1:] or logged in _FIXED_WORDS
                continue
            for index, word in enumerate(step.argv):
                if logged in word and word.lstrip("./") == logged.lstrip("./"):
                    # an operand from the log: after '--', or after an option that takes it,
                    # and never itself beginning with '-'
                    assert not word.startswith("-")
                    assert index > 0


def test_a_capture_directory_from_the_log_is_quoted_or_refused(tmp_path):
    frames = (
        '  File "/usr/lib/python3.11/site-packages/sglang/srt/sampling/sampling_observer_pp.py",'
        " line 77, in pop_auxiliary_output_from_pp_tensors\n    call()\n"
    )
    for directory in ("/var/tmp/cap; touch M; $(touch M)", "--output=FILE", "/data/my captures"):
        log = tmp_path / "cap.log"
        log.write_text(
            f"[2026-12-03 10:00:00 PP1] ppaux capture: capturing aux into {directory} "
            "(when=error)\n"
            "[2026-12-03 10:00:01 PP0] Scheduler hit an exception: Traceback (most recent call "
            "last):\n" + frames + "RuntimeError: received a non-tensor auxiliary PP output\n"
        )
        report = triage_paths([str(log)])
        steps = report.data["steps"]
        listing = [s for s in steps if s["argv"] and s["argv"][:3] == ["ppaux", "capture", "list"]]
        assert listing, steps
        argv = listing[0]["argv"]
        assert argv[-1] in (directory, f"./{directory}")
        assert not argv[-1].startswith("-")
        rendered = [
            line for line in report.data["next_steps"] if line.startswith("ppaux capture list")
        ]
        assert shlex.split(rendered[0]) == argv
        inspect = [s["argv"] for s in steps if s["argv"] and s["argv"][:2] == ["ppaux", "inspect"]]
        assert inspect[0][2] == "--"


def test_text_that_cannot_be_shown_is_a_comment_naming_the_problem():
    steps = next_steps([("auxiliary-output", None)], Deployment(), [("/tmp/a\x1b[2Jb", False)], [])
    refused = [s for s in steps if s.argv is None and "capture directory" in s.comment]
    assert len(refused) == 3  # capture list, inspect, replay
    for step in refused:
        assert "control characters" in step.comment
        assert "\x1b" not in render(step)
    assert not any(s.argv and any("\x1b" in word for word in s.argv) for s in steps)


def test_pp_size_comes_from_the_server_arguments(tmp_path):
    log = tmp_path / "args.log"
    log.write_text(
        "[2026-12-03 10:00:00] server_args=ServerArgs(model_path='org/model', tp_size=1, "
        "pp_size=4, nnodes=1, node_rank=0)\n"
        "[2026-12-03 10:00:05 PP1] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/usr/lib/python3.11/site-packages/sglang/srt/layers/linear.py", line 10, in f\n'
        "    x()\n"
        "RuntimeError: The size of tensor a (360) must match the size of tensor b (368)\n"
    )
    report = triage_paths([str(log)])
    assert report.data["pp_size"] == {"value": 4, "from": "server arguments"}
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["kind"] == "shape-kernel"
    text = "\n".join(report.data["next_steps"])
    assert "report it upstream with the model (org/model)" in text
    assert "python3 -m sglang.check_env" in text
    assert "PPAUX_CAPTURE" not in text


def test_a_root_on_a_stage_that_cannot_raise_its_message_is_said_so(tmp_path):
    log = tmp_path / "wrong-stage.log"
    log.write_text(
        "[2026-12-03 10:00:00] server_args=ServerArgs(model_path='m', pp_size=2, nnodes=1)\n"
        "[2026-12-03 10:00:01 PP1] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/usr/lib/python3.11/site-packages/sglang/srt/sampling/sampling_observer_pp.py",'
        " line 77, in pop_auxiliary_output_from_pp_tensors\n    call()\n"
        "RuntimeError: received a non-tensor auxiliary PP output\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    assert "PP1 is not the first stage" in root.message
    assert root.extra["stage_fits"] is False
    # one launch of two stages shares one environment: no 'on PP1 only'
    steps = report.data["next_steps"]
    assert not any("PP1 only" in s for s in steps)
    assert any("one launch shares one environment" in s for s in steps)


def test_explain_names_the_kind_of_a_line_that_is_not_one_of_the_nine():
    from typer.testing import CliRunner

    from ppaux_cli.app import app

    result = CliRunner().invoke(
        app, ["explain", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"]
    )
    assert result.exit_code == 2
    headline, *under = result.output.splitlines()
    assert "none of sglang's nine PP messages: it is a memory failure" in headline
    assert "'ppaux triage' on the whole log names the root" in headline
    assert "(the device or host ran out of memory)" in under[0]


@given(
    st.text(
        alphabet=st.characters(categories=("Cf", "Zl", "Zp", "Zs", "Co", "Mn")),
        min_size=1,
        max_size=3,
    ).filter(lambda s: not s.isprintable())
)
def test_a_directory_with_any_unprintable_character_is_a_comment_not_a_command(odd):
    # Anything a report would escape (ppaux.text.shown) would make the command name another
    # path; bidi isolates, U+FEFF, line separators and odd spaces included.
    directory = f"/tmp/a{odd}b"
    steps = next_steps([("auxiliary-output", None)], Deployment(), [(directory, False)], [])
    assert not any(s.argv and any(directory in word for word in s.argv) for s in steps)
    refused = [s for s in steps if s.argv is None and "capture directory" in s.comment]
    assert len(refused) == 3


def test_a_stage_number_from_the_log_never_makes_a_step_per_stage_past_the_bound(tmp_path):
    log = tmp_path / "big.log"
    log.write_text(
        "[2026-12-03 10:00:05 PP999999] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/usr/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 10, '
        "in f\n"
        "    x()\n"
        "ValueError: something else\n"
    )
    report = triage_paths([str(log)])
    argvs = [s["argv"] for s in report.data["steps"] if s["argv"]]
    assert all(len(argv) < 12 for argv in argvs)
    # a placeholder is never in a command line: the per-stage command is a comment; the first
    # stage's is a command (stage 0 is there whatever the count), and so is the comparison of
    # the folder the stages' files are written to
    assert not any("N" in argv or "stages/stage-N.json" in argv for argv in argvs)
    assert ["ppaux", "check-skew", "--", "stages/"] in argvs
    assert [
        "ppaux",
        "fingerprint",
        "--pp-rank",
        "0",
        "--pp-size",
        "1000000",
        "-o",
        "stages/stage-0.json",
    ] in argvs
    comments = [s["comment"] for s in report.data["steps"] if s["argv"] is None]
    assert any("--pp-rank N" in c and "stages/stage-N.json" in c for c in comments)
    # the folder the per-stage files go to is made by a command, before the comment that
    # names them; and the comment says where to run it and what N is
    steps = report.data["steps"]
    made = next(i for i, s in enumerate(steps) if s["argv"] == ["mkdir", "-p", "stages"])
    named = next(i for i, s in enumerate(steps) if "stages/stage-N.json" in s["comment"])
    assert made < named
    assert "on each other stage's host, N its pipeline rank" in steps[named]["comment"]


def test_explain_passes_no_comment_on_as_the_next_step():
    from typer.testing import CliRunner

    from ppaux_cli.app import app

    text = Path("fixtures/logs/real/sglang-10046-cut-header.log").read_text()
    result = CliRunner().invoke(app, ["explain", "-"], input=text)
    said = " ".join(result.output.split())
    assert "the next step triage gives it" not in said
    assert ": mkdir -p stages" not in said
    assert "its next steps are to adapt, not to paste as they are" in said


def _every_rank_timed_out(sigquit: bool) -> str:
    lines = []
    for pp in range(2):
        lines += [
            f"[2026-12-03 10:10:0{pp} PP{pp} TP0] Scheduler hit an exception: Traceback (most "
            "recent call last):",
            '  File "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
            "line 4000, in barrier",
            "    work.wait()",
            "torch.distributed.DistBackendError: [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600005 "
            "milliseconds before timing out.",
        ]
    if sigquit:
        lines.append(
            "[2026-12-03 10:10:03] SIGQUIT received. signum=None, frame=None. It usually means "
            "one child failed."
        )
    return "\n".join(lines) + "\n"


def test_the_parents_sigquit_does_not_turn_a_network_failure_into_another_kind(tmp_path):
    found = {}
    for sigquit in (False, True):
        log = tmp_path / f"timeout-{sigquit}.log"
        log.write_text(_every_rank_timed_out(sigquit))
        report = triage_paths([str(log)])
        (no_root,) = [f for f in report.findings if f.code == "PP809"]
        found[sigquit] = (no_root.extra["no_root"], no_root.severity.value)
        assert any("NCCL_DEBUG=INFO" in line for line in report.data["next_steps"]), sigquit
    # Processes failed: an error (a gate fails), with or without the parent's line.
    assert found == {
        False: ("network-or-other-node", "error"),
        True: ("network-or-other-node", "error"),
    }


def test_a_launch_command_with_pp_size_runs_every_stage_on_one_host(tmp_path):
    for nodes in ("", " --nnodes 1"):
        log = tmp_path / "launch.log"
        log.write_text(
            "$ python3 -m sglang.launch_server --model-path org/model --pp-size 2"
            f"{nodes} --port 30000\n"
            "[2026-12-03 10:00:01 PP0] Scheduler hit an exception: Traceback (most recent call "
            "last):\n"
            '  File "/usr/lib/python3.11/site-packages/sglang/srt/sampling/'
            'sampling_observer_pp.py", line 77, in pop_auxiliary_output_from_pp_tensors\n'
            "    call()\n"
            "RuntimeError: received a non-tensor auxiliary PP output\n"
        )
        report = triage_paths([str(log)])
        assert report.data["pp_size"] == {"value": 2, "from": "launch command"}
        text = "\n".join(report.data["next_steps"])
        assert "on PP1 only" not in text and "PP1's host" not in text
        assert "one launch shares one environment" in text


def test_the_causes_shown_are_those_of_the_message_and_side_that_failed(tmp_path):
    from ppaux.report import Format, page_for, render

    log = tmp_path / "add.log"
    log.write_text(
        "[2026-12-03 10:00:01 PP1] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/usr/lib/python3.11/site-packages/sglang/srt/sampling/'
        'sampling_observer_pp.py", line 52, in add_auxiliary_output_to_pp_tensors\n'
        "    raise RuntimeError(...)\n"
        "RuntimeError: auxiliary PP output 'scores' is not a tensor\n"
    )
    report = triage_paths([str(log)])
    (root,) = [f for f in report.findings if f.code == "PP801"]
    expected = list(page_for(root.extra["sglang_message"]).causes)
    assert root.extra["causes"] == expected
    text = render(report, Format.TEXT, width=200)
    for cause in expected:
        assert cause in text
    assert "The first stage's pop" not in text  # the rule's causes for rank 0's message


@pytest.mark.parametrize(
    ("functions", "exception", "kind"),
    [
        # A communicator's set-up, told by its frames when the message does not say NCCL.
        (
            ["init_torch_distributed", "initialize_model_parallel", "__init__"],
            "OSError: libnccl.so.2: cannot open shared object file: No such file or directory",
            "communication-init",
        ),
        (["init_distributed_environment", "__init__"], "AssertionError", "communication-init"),
        # The memory planning, told by its frames.
        (
            ["init_memory_pool", "profile_max_num_token"],
            "ValueError: max_total_num_tokens=-512 must be positive",
            "memory",
        ),
        # A weight that does not fit its parameter is a shape failure, wherever it is raised.
        (
            ["load_weights", "weight_loader"],
            "AssertionError: Attempted to load weight (torch.Size([8192, 4096])) into parameter "
            "(torch.Size([4096, 4096]))",
            "shape-kernel",
        ),
        # Frames of nothing special leave an unknown error 'other'.
        (["event_loop_pp", "run_batch"], "ValueError: something else", "other"),
    ],
)
def test_the_kind_comes_from_the_frames_where_the_message_does_not_say(functions, exception, kind):
    from ppaux.triage import kind_of_text

    frames = "".join(
        f'  File "/usr/lib/python3.11/site-packages/sglang/srt/m{n}.py", line 10, in {name}\n'
        "    call()\n"
        for n, name in enumerate(functions)
    )
    text = f"Traceback (most recent call last):\n{frames}{exception}\n"
    assert kind_of_text(text) == kind


_KINDS = st.sampled_from(
    [
        "auxiliary-output",
        "communication",
        "communication-init",
        "memory",
        "shape-kernel",
        "other",
        "unknown",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    deployment=_DEPLOYMENTS,
    kinds=st.lists(_KINDS, max_size=4),
    no_root=st.sampled_from([None, "network-or-other-node", "process-died", "signals-only"]),
)
def test_a_comparison_names_only_files_an_earlier_step_writes(deployment, kinds, no_root):
    written: set[str] = set()
    for step in next_steps([(k, None) for k in kinds], deployment, [], [], None, no_root):
        argv = list(step.argv or ())
        if argv[:2] == ["ppaux", "fingerprint"]:
            written.add(argv[argv.index("-o") + 1])
        if argv[:2] == ["ppaux", "check-skew"]:
            named = argv[argv.index("--") + 1 :]
            # a file an earlier step writes, or the folder earlier steps write into
            assert named and all(
                name in written or any(w.startswith(name) for w in written) for name in named
            ), (named, written)


def test_no_stage_comparison_where_the_logs_show_no_pipeline():
    for kind in ("other", "unknown"):
        steps = next_steps([(kind, None)], Deployment(), [], [])
        assert not any(s.argv and "check-skew" in s.argv for s in steps)
        assert not any(s.argv and "fingerprint" in s.argv for s in steps)
        assert "no pipeline stage" in " ".join(s.comment for s in steps)
    cut = next_steps([("unknown", None)], Deployment(), [], [])
    assert "whole log" in cut[0].comment
    # a PPn prefix shows stages: the comparison is there, its files written first
    staged = next_steps([("other", None)], Deployment(highest_stage=1), [], [])
    argvs = [list(s.argv) for s in staged if s.argv]
    assert ["ppaux", "check-skew", "--", "stage-0.json", "stage-1.json"] in argvs


def test_a_process_that_died_of_what_the_log_does_not_say_gets_its_hosts_oom_kills():
    steps = next_steps([], Deployment(), [], [], None, "process-died")
    argvs = [s.argv for s in steps if s.argv]
    assert ("journalctl", "-k", "-g", "Killed process|Out of memory") in argvs
    assert "OOM killer" in steps[0].comment
    assert not any("check-skew" in a for a in argvs)
