"""Next steps for a configuration error (:data:`~ppaux.triage.kinds.CONFIGURATION`): a
program's own check of its parallel settings that failed before anything ran. What to check is
said in the words of the program whose check it is, told from the exception's message and its
frames: Megatron-Core's layers per stage, TensorRT-LLM's MPI world against its engine's
parallel sizes, torch's pipelining schedule and its micro-batches, sglang's server arguments,
else the job's own settings. The steps are data: a comment each, no command built from the
log's text."""

from __future__ import annotations

from ppaux.triage.records import Failure
from ppaux.triage.stepdata import Deployment, Step

__all__ = ["SETTINGS", "configuration_steps", "setting_program"]

_CONFIG = "the job's configuration"

#: Each program's settings to check, in its own words, by the name :func:`setting_program`
#: gives it.
SETTINGS: dict[str, str] = {
    "megatron": (
        "Megatron-Core splits the model's layers evenly among the pipeline stages: num_layers "
        "must be divisible by pipeline_model_parallel_size (--num-layers, "
        "--pipeline-model-parallel-size); or give the first and last stages counts of their "
        "own (--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers, where "
        "the release has them), or set a virtual pipeline size that divides the rest"
    ),
    "tensorrt-llm": (
        "TensorRT-LLM runs one MPI process per GPU of its engine: the MPI world must be the "
        "engine's tensor times pipeline parallel size (mpiSize == tp * pp, as the engine was "
        "built): launch it with mpirun -n set to tp * pp (or the launcher's world size to it), "
        "or rebuild the engine for the GPUs given"
    ),
    "torch-pipelining": (
        "torch.distributed.pipelining's schedule splits each batch into n_microbatches "
        "micro-batches and was given fewer: n_microbatches must be at least the number of "
        "stages, and the local batch size divisible by it (torchtitan: "
        "--parallelism.pipeline_parallel_microbatch_size and the local batch size)"
    ),
    "sglang": (
        "sglang's check of its parallel settings failed at start-up: --pp-size, --tp-size, "
        "--dp-size and --nnodes must fit the GPUs given and the model (its layers divided "
        "among the --pp-size stages, its attention heads among --tp-size)"
    ),
    "checkpoint": (
        "torch refused the checkpoint: its tensors have other sizes than the model built "
        "from the configuration (the message names each parameter, the checkpoint's shape "
        "and the model's): the files are whole, downloading them again changes nothing. "
        "Build the model with the configuration the checkpoint was saved with (its "
        "vocabulary size, hidden size, number of layers and heads), or load the checkpoint "
        "that was saved for this configuration"
    ),
    "job": (
        "the job's own check of its parallel settings failed before anything ran: the "
        "message at the line given names the settings and the rule they break (the stages, "
        "the parallel sizes, the batch and micro-batch sizes against the stages); set them "
        "to fit in the job's configuration, then restart it"
    ),
}

#: Words of a program's files or messages, and the program they say.
_PROGRAMS = (
    ("checkpoint", ("Error(s) in loading state_dict",)),
    ("megatron", ("megatron/", "pipeline_model_parallel_size")),
    ("tensorrt-llm", ("[TensorRT-LLM]", "tensorrt_llm/")),
    ("torch-pipelining", ("torch/distributed/pipelining/", "arg_mbs", "n_microbatches")),
)


def setting_program(failure: Failure, deployment: Deployment) -> str:
    """The program whose settings a configuration error ``failure`` is of (a key of
    :data:`SETTINGS`): told by its message and its frames' files; sglang where the logs show
    sglang ran and nothing names another; else the job's own."""
    text = " ".join([failure.message[:2000], *(frame.file for frame in failure.frames[-50:])])
    for program, words in _PROGRAMS:
        if any(word in text for word in words):
            return program
    return "sglang" if deployment.sglang else "job"


def configuration_steps(program: str) -> list[Step]:
    """A configuration error's steps: no failure of the run to chase (no NCCL, no memory),
    the settings of ``program`` to check (:data:`SETTINGS`)."""
    where = "the launch command" if program == "sglang" else _CONFIG
    return [
        Step(
            None,
            where,
            "a configuration error, not a failure of the run (nothing to collect from other "
            "ranks, no network or memory to check): " + SETTINGS.get(program, SETTINGS["job"]),
        ),
    ]
