"""Triton's host-side build (its launcher compiled with the host's C compiler, a kernel compiled
from its source) that fails at start-up is a build failure: kind ``build``, with the build's
steps (a C compiler to install or name in CC), never a kernel's fault on the device's steps
(``CUDA_LAUNCH_BLOCKING``). Expected values are written here by hand."""

from __future__ import annotations

import io

import pytest

from ppaux.triage import triage_paths

_LOGGER = "ERROR 03-22 09:50:04 [core.py:340] "
_BUILD_FRAMES = (
    '  File "/opt/conda/lib/python3.10/site-packages/triton/backends/nvidia/driver.py", line '
    "57, in compile_module_from_src\n"
    "    so = _build(name, src_path, tmpdir, library_dirs(), include_dir, libraries)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/triton/runtime/build.py", line 32, in '
    "_build\n"
)
_COMPILE_FRAMES = (
    '  File "/usr/lib/python3/dist-packages/triton/runtime/jit.py", line 569, in run\n'
    "    kernel = self.compile(src, target=target, options=options.__dict__)\n"
    '  File "/usr/lib/python3/dist-packages/triton/compiler/compiler.py", line 278, in compile\n'
    "    module = src.make_ir(options, codegen_fns, module_map, context)\n"
)


def _logged(text: str) -> str:
    return "".join(_LOGGER + line + "\n" for line in text.splitlines())


@pytest.mark.parametrize(
    "log",
    [
        # cut inside the raise, its message not closed
        _logged(_BUILD_FRAMES + '    raise RuntimeError("Failed to find C compiler. Please'),
        _logged(
            _BUILD_FRAMES + '    raise RuntimeError("Failed to find C compiler. Please specify '
            'via CC environment variable.")\nRuntimeError: Failed to find C compiler. Please '
            "specify via CC environment variable."
        ),
        # a kernel's compilation, cut in Triton's compiler
        _logged(_COMPILE_FRAMES),
    ],
)
def test_a_triton_build_is_a_build_failure_with_build_steps(log):
    report = triage_paths(["run.log"], {"run.log": io.BytesIO(log.encode())})
    (root,) = [f for f in report.findings if f.code == "PP802"]
    assert root.extra["kind"] == "build"
    words = [f"{s['comment']} {' '.join(s['argv'] or [])}" for s in report.data["steps"]]
    assert not any("CUDA_LAUNCH_BLOCKING" in w for w in words), words
    assert any("C compiler" in w and "CC" in w for w in words), words
