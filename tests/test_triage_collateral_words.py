"""What follows from the root, written above it in its log with no time to order them (two
ranks' tracebacks interleaved behind Slurm's ``srun --label``), is said to stand above it,
never to have failed before the root it is collateral of."""

from __future__ import annotations

from ppaux.triage import triage_paths


def test_a_cut_traceback_above_the_root_is_never_said_to_fail_before_it(tmp_path):
    log = tmp_path / "srun.log"
    log.write_text(
        " 2: [rank2]: Traceback (most recent call last):\n"
        ' 2: [rank2]:   File "/srv/lightning/call.py", line 46, in _call_and_handle_interrupt\n'
        " 2: [rank2]:     return trainer.strategy.launcher.launch(trainer_fn)\n"
        "15: [rank15]: Traceback (most recent call last):\n"
        '15: [rank15]:   File "/srv/megatron/transformer_block.py", line 110, in build\n'
        "15: [rank15]:     num_layers % config.pipeline_model_parallel_size == 0\n"
        "15: [rank15]: AssertionError: num_layers should be divisible by "
        "pipeline_model_parallel_size\n"
        ' 2: [rank2]:   File "/srv/lightning/launch.py", line 105, in launch\n'
        " 2: [rank2]:     return function(*args, **kwargs)\n"
    )
    findings = triage_paths([str(log)]).findings
    (root,) = [f for f in findings if f.code == "PP802"]
    assert root.extra["exception"] == "AssertionError"
    (after,) = [f for f in findings if f.code == "PP803"]
    assert "rank 2" in after.message and "collateral of" in after.message
    assert "before the root" not in after.message
    assert "above the root in its log" in after.message
