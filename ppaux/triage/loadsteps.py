"""Next steps for a failure of what a process builds, loads or writes before it serves
(:mod:`ppaux.triage.loadkinds`): a kernel's JIT build, a full disk, the model's weights. Each a
step as data (:class:`~ppaux.triage.stepdata.Step`), the same in every format."""

from __future__ import annotations

from ppaux.triage.loadkinds import BUILD, DISK, DRIVER
from ppaux.triage.stepdata import Step, from_log, unsafe

__all__ = ["load_steps"]


def load_steps(kind: str, model: str | None = None) -> list[Step]:
    """The steps for a root of ``kind`` ('build', 'disk', 'weights', 'driver'); ``model``: the
    model sglang's server arguments name (``model_path=``), or None."""
    if kind == BUILD:
        return _build_steps()
    if kind == DRIVER:
        return _driver_steps()
    if kind == DISK:
        return _disk_steps()
    return _weights_steps(model)


def _driver_steps() -> list[Step]:
    where = "the host that failed"
    return [
        Step(
            None,
            where,
            "the NVIDIA driver, the CUDA runtime and the installed build do not fit each other "
            "(no kernel ran wrong: launches made synchronous would show nothing more): a driver "
            "older than the CUDA the build was made for, or a build made without this GPU's "
            "architecture ('no kernel image is available')",
        ),
        Step(
            ("nvidia-smi",),
            where,
            "its header shows the driver's version and the highest CUDA it supports",
        ),
        Step(
            ("nvidia-smi", "--query-gpu=index,name,compute_cap", "--format=csv"),
            where,
            "each GPU's architecture (compute capability) the build must hold",
        ),
        Step(
            (
                "python3",
                "-c",
                "import torch; print(torch.__version__, torch.version.cuda, "
                "torch.cuda.get_arch_list())",
            ),
            "the failing process's environment",
            "the CUDA torch was built for and the architectures it holds (a package's own build, "
            "lmdeploy's TurboMind or a kernel library, names its CUDA in its wheel's name)",
        ),
        Step(
            None,
            where,
            "upgrade the driver to one that supports the build's CUDA, or install the build "
            "made for the CUDA the driver supports and for this GPU's architecture",
        ),
    ]


def _build_steps() -> list[Step]:
    where = "the host that failed"
    return [
        Step(
            None,
            where,
            "a kernel compiled at start-up (torch's C++ extensions, flashinfer's JIT, Triton) did "
            "not build: the compiler's own output above the traceback (ninja's 'FAILED:' line, "
            "nvcc's 'error') says why",
        ),
        Step(
            ("cc", "--version"),
            where,
            "Triton builds its launcher with the host's C compiler: where none is found "
            "('Failed to find C compiler'), install one (gcc) or name it in the CC variable",
        ),
        Step(("nvcc", "--version"), where, "the CUDA toolkit the build used"),
        Step(
            ("python3", "-c", "import torch; print(torch.__version__, torch.version.cuda)"),
            where,
            "the CUDA torch was built for: the toolkit must match it (CUDA_HOME names the "
            "toolkit a build uses)",
        ),
        Step(
            ("df", "-h", "/tmp"),
            where,
            "a build needs room for its objects; then clear the build's cache and start again "
            "(flashinfer's ~/.cache/flashinfer, torch's ~/.cache/torch_extensions, Triton's "
            "~/.triton/cache): a build cut short leaves a broken one",
        ),
        Step(
            ("export", "MAX_JOBS=4"),
            where,
            "where the compiler was killed for memory: fewer parallel jobs; or install the "
            "release's prebuilt kernels (flashinfer's JIT cache package) so that nothing is "
            "compiled at start-up",
        ),
    ]


def _disk_steps() -> list[Step]:
    where = "the host that failed"
    return [
        Step(
            None,
            where,
            "a disk or the shared memory the process wrote to is full (ENOSPC): in a container "
            "/dev/shm holds 64 MB unless it is given more (a DataLoader's workers and "
            "multiprocessing's locks live there)",
        ),
        Step(("df", "-h", "/dev/shm", "/tmp"), where, "the shared memory and the temporary disk"),
        Step(("df", "-h"), where, "every filesystem: the caches' and the outputs' too"),
        Step(
            None,
            where,
            "give the container more shared memory (docker run --shm-size=16g, or --ipc=host; "
            "on Kubernetes an emptyDir with medium: Memory mounted at /dev/shm), or move the "
            "caches (HF_HOME, TRITON_CACHE_DIR, TMPDIR) to a disk with room, then restart",
        ),
    ]


def _model_steps(model: str | None, where: str) -> list[Step]:
    """Look at the model's files, and fetch what is missing: of the model the log names (a
    directory: a path; else the Hub's name), or of placeholders where it names none."""
    fetch = (
        "fetches what is missing (HF_TOKEN set for a gated model), into HF_HOME "
        "(huggingface_hub before 1.0: huggingface-cli download)"
    )
    if model is not None and unsafe(model) is not None:
        model = None  # not to be put in a command: the placeholders
    if model is not None and model.startswith(("/", "./", "../", "~")):
        return [
            from_log(
                ("ls", "-l"),
                model,
                "the model's directory",
                where,
                "every file its model.safetensors.index.json names must be there, none of size 0",
            ),
            Step(
                ("hf", "download", "MODEL", "--local-dir", model),
                where,
                f"MODEL: the model's Hub name; {fetch}",
            ),
        ]
    listing = Step(
        ("ls", "-l", "MODEL_DIR"),
        where,
        "MODEL_DIR: the model's directory (--model-path): every file its "
        "model.safetensors.index.json names must be there, none of size 0",
    )
    if model is not None:
        return [listing, from_log(("hf", "download"), model, "the model", where, fetch)]
    return [
        listing,
        Step(("hf", "download", "MODEL"), where, f"MODEL: the model's Hub name; {fetch}"),
    ]


def _weights_steps(model: str | None) -> list[Step]:
    where = "the host that failed"
    return [
        Step(
            None,
            where,
            "the model's weights could not be read or fetched: a file missing, empty or cut "
            "short, a checkpoint of another model or size, a filesystem that refuses to map a "
            "file (os error 19), or the Hub refusing the download (a gated model, a token)",
        ),
        *_model_steps(model, where),
        Step(
            None,
            where,
            "weights on a network filesystem that cannot map files (FUSE, some NFS): copy them "
            "to a local disk and point --model-path there",
        ),
    ]
