"""docs/install.md's recipes run as written, in a copy of the checkout, and install ppaux.

Every ``bash`` block of the page runs line by line from the top of a copy, in a shell whose
``PATH`` has no ppaux of this test run (so each ``ppaux`` is the one the recipe installed).
The pages that used to say ``pip install 'ppaux[torch]'`` (ppaux is not on the package index)
must not say it again.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from checkout import REPO, clean_env, copy_checkout

DOCS = REPO / "docs"


def _sections(page: str) -> dict[str, list[list[str]]]:
    """The lines of each ``bash`` block, by the ``##`` section the block is in."""
    text = (DOCS / page).read_text(encoding="utf-8")
    sections: dict[str, list[list[str]]] = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        heading = part.splitlines()[0]
        sections[heading] = [
            [line for line in block.splitlines() if line.strip()]
            for block in re.findall(r"```bash\n(.*?)```", part, re.S)
        ]
    return sections


def _run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", line],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _run_blocks(blocks: list[list[str]], checkout: Path, tmp_path: Path, tag: str) -> list[str]:
    """Run ``blocks`` in order in ``checkout``; each block gets a pipx home of its own, as a
    different host would. Returns the lines run."""
    tools = tmp_path / f"tools-{tag}"  # pipx, as the test extra installs it, and nothing else
    tools.mkdir()
    (tools / "pipx").symlink_to(Path(sys.executable).parent / "pipx")
    ran = []
    for number, block in enumerate(blocks):
        pipx_bin = tmp_path / f"pipx-bin-{tag}-{number}"
        env = clean_env(tmp_path / f"scratch-{tag}", tools, pipx_bin)
        env.update(
            PIPX_HOME=str(tmp_path / f"pipx-home-{tag}-{number}"),
            PIPX_BIN_DIR=str(pipx_bin),
            PIPX_MAN_DIR=str(tmp_path / f"pipx-man-{tag}"),
        )
        for line in block:
            done = _run(line, checkout, env)
            ran.append(line)
            if line.endswith("ppaux inspect fixtures/dumps/aux_list.pt"):
                # The bundled dump holds an error on purpose: exit 1 and the code.
                assert done.returncode == 1, f"{line!r}: {done.returncode} {done.stderr}"
                assert "PP101 error fixtures/dumps/aux_list.pt" in done.stdout
            else:
                assert done.returncode == 0, f"{line!r} exited {done.returncode}: {done.stderr}"
            if line.endswith("ppaux explain PP101"):
                assert "aux-non-tensor" in done.stdout
            assert "Traceback" not in done.stderr
    return ran


def test_install_page_recipes_run_as_written(tmp_path):
    sections = _sections("install.md")
    assert list(sections) == ["From a checkout", "On a host without network access", "With pipx"]
    # Two independent runs, each in a copy of its own, side by side to save time: the checkout
    # recipes, and the wheelhouse recipes followed by pipx (whose second recipe installs from
    # that wheelhouse).
    first = copy_checkout(tmp_path / "ppaux-1")
    second = copy_checkout(tmp_path / "ppaux-2")
    with ThreadPoolExecutor(2) as pool:
        runs = [
            pool.submit(_run_blocks, sections["From a checkout"], first, tmp_path, "a"),
            pool.submit(
                _run_blocks,
                sections["On a host without network access"] + sections["With pipx"],
                second,
                tmp_path,
                "b",
            ),
        ]
        ran = [line for run in runs for line in run.result()]
    assert len(ran) == sum(len(b) for blocks in sections.values() for b in blocks)
    # What the recipes promise is there: a venv with torch, a wheelhouse, pipx's command.
    assert any("pipx install" in line for line in ran)
    torch = subprocess.run(
        [
            str(first / ".venv" / "bin" / "python"),
            "-c",
            "import torch, ppaux; print(torch.__version__)",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert torch.returncode == 0 and torch.stdout.startswith("2."), torch.stderr
    wheels = sorted(p.name for p in (second / "wheelhouse").iterdir())
    assert "ppaux-0.1.0-py3-none-any.whl" in wheels
    assert any(name.startswith("typer-") for name in wheels)
    assert (second / "ppaux-env" / "bin" / "ppaux").is_file()


def test_no_page_says_ppaux_is_on_the_package_index():
    pages = [REPO / "README.md", *DOCS.glob("*.md")]
    for page in pages:
        text = page.read_text(encoding="utf-8").replace("`pip install ppaux` does not find it", "")
        assert not re.search(r"pip install '?ppaux\b", text), page.name
    install = (DOCS / "install.md").read_text(encoding="utf-8")
    assert "not published on the Python package index" in install


def test_the_torch_extra_brings_numpy():
    # torch does not require numpy; without it check-observer reports torch's "Numpy is not
    # available" instead of an observer that sends a numpy array (docs/observers.md).
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    names = {
        re.split(r"[<>=!~ \[;]", requirement, maxsplit=1)[0] for requirement in extras["torch"]
    }
    assert names == {"torch", "numpy"}
    assert "torch and numpy" in (DOCS / "install.md").read_text(encoding="utf-8")
