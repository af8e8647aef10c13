"""docs/install.md's recipes run as written, in a copy of the checkout, and install ppaux.

Every ``bash`` block of the page runs line by line from the top of the copy, in a shell whose
``PATH`` has no ppaux of this test run (so each ``ppaux`` is the one the recipe installed).
Each pipx block gets a pipx home of its own, as a different host would. The pages that used to
say ``pip install 'ppaux[torch]'`` (ppaux is not on the package index) must not say it again.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from checkout import REPO, clean_env, copy_checkout

DOCS = REPO / "docs"


def _blocks(page: str) -> list[list[str]]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return [[line for line in block.splitlines() if line.strip()]
            for block in re.findall(r"```bash\n(.*?)```", text, re.S)]


def _run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_install_page_recipes_run_as_written(tmp_path):
    checkout = copy_checkout(tmp_path / "ppaux")
    tools = tmp_path / "tools"  # pipx, as the test extra installs it, and nothing else
    tools.mkdir()
    (tools / "pipx").symlink_to(Path(sys.executable).parent / "pipx")
    blocks = _blocks("install.md")
    assert len(blocks) >= 5
    ran = []
    for number, block in enumerate(blocks):
        pipx_bin = tmp_path / f"pipx-bin-{number}"
        env = clean_env(tmp_path / "scratch", tools, pipx_bin)
        env.update(PIPX_HOME=str(tmp_path / f"pipx-home-{number}"), PIPX_BIN_DIR=str(pipx_bin),
                   PIPX_MAN_DIR=str(tmp_path / f"pipx-man-{number}"))
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
    # What the recipes promise is there: a venv with torch, a wheelhouse, pipx's command.
    assert any("pipx install" in line for line in ran)
    torch = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c",
                            "import torch, ppaux; print(torch.__version__)"],
                           capture_output=True, text=True, timeout=300)
    assert torch.returncode == 0 and torch.stdout.startswith("2."), torch.stderr
    wheels = sorted(p.name for p in (checkout / "wheelhouse").iterdir())
    assert "ppaux-0.1.0-py3-none-any.whl" in wheels
    assert any(name.startswith("typer-") for name in wheels)
    assert (checkout / "ppaux-env" / "bin" / "ppaux").is_file()


def test_no_page_says_ppaux_is_on_the_package_index():
    pages = [REPO / "README.md", *DOCS.glob("*.md")]
    for page in pages:
        text = page.read_text(encoding="utf-8").replace(
            "`pip install ppaux` does not find it", "")
        assert not re.search(r"pip install '?ppaux\b", text), page.name
    install = (DOCS / "install.md").read_text(encoding="utf-8")
    assert "not published on the Python package index" in install
