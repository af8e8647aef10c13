"""The documentation: generated pages current, every page in the nav, schema and recipes true.

The site itself is built by ``mkdocs build --strict`` in CI; these tests keep what it is built
from honest: the rule catalogue, the CLI reference and the capture-format page must equal what
``scripts/generate_docs.py`` writes now, the report schema must accept what ``inspect`` prints,
and the CI recipes must run as written against the bundled fixtures.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from helpers import REPO

DOCS = REPO / "docs"
SARIF_SCHEMA = json.loads((REPO / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())


def _generator():
    spec = importlib.util.spec_from_file_location(
        "generate_docs", REPO / "scripts" / "generate_docs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["catalogue.md", "cli.md", "capture-format.md"])
def test_generated_pages_are_current(page):
    pages = {path.name: text for path, text in _generator().pages().items()}
    current = (DOCS / page).read_text(encoding="utf-8")
    assert current == pages[page], (
        f"docs/{page} is out of date: run python scripts/generate_docs.py"
    )


def test_catalogue_page_has_every_rule_with_an_anchor():
    from ppaux.report.catalogue import RULES

    text = (DOCS / "catalogue.md").read_text(encoding="utf-8")
    for code, rule in RULES.items():
        assert f"## {code} {rule.name} {{ #{code.lower()} }}" in text


def test_cli_reference_lists_every_command():
    import typer

    from ppaux_cli.app import app

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    group = typer.main.get_command(app)
    for name in group.commands:
        assert re.search(rf"^### ppaux {re.escape(name)}$", text, re.M), name


def _nav_pages() -> list[str]:
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    return re.findall(r":\s+(\S+\.md)\s*$", nav, re.M)


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = _nav_pages()
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert sorted(set(nav) & set(pages)) == pages, "pages missing from mkdocs.yml nav"
    assert len(nav) == len(set(nav))


def test_internal_links_point_at_pages_and_anchors_that_exist():
    from ppaux.report.catalogue import RULES

    anchors = {f"catalogue.md#{c.lower()}" for c in RULES}
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "#")):
                continue
            name, _, anchor = target.partition("#")
            if not (DOCS / name).exists() and not _nav_pages().count(name):
                pytest.fail(f"{page.name} links to {target}, which is not a page")
            if anchor and name == "catalogue.md":
                assert target in anchors, f"{page.name} links to unknown rule anchor {target}"


def test_report_schema_accepts_every_inspect_report():
    schema = json.loads((DOCS / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppaux_cli",
            "inspect",
            "--format",
            "json",
            "fixtures/dumps",
            "fixtures/malicious",
            "fixtures/corrupt",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 2  # fixtures/corrupt holds unreadable files on purpose
    document = json.loads(result.stdout)
    errors = [
        f"{e.json_path}: {e.message}"
        for e in jsonschema.Draft202012Validator(schema).iter_errors(document)
    ]
    assert errors == []
    assert len(document["files"]) >= 40 and document["problems"]


# -- the CI recipes, run as written --------------------------------------------------------------


def _recipe_scripts(page: str) -> list[str]:
    """Every shell script of the page's YAML blocks: ``run:`` steps and GitLab ``script:`` items."""
    text = (DOCS / page).read_text(encoding="utf-8")
    scripts: list[str] = []
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            match = re.match(r"^(\s*)(?:- )?run: (.*)$", line)
            if match and match.group(2).strip() == "|":
                indent = len(match.group(1))
                body = []
                i += 1
                while i < len(lines) and (
                    not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
                ):
                    body.append(lines[i].strip())
                    i += 1
                scripts.append("\n".join(b for b in body if b))
                continue
            if match:
                scripts.append(match.group(2).strip())
            elif re.match(r"^\s*script:\s*$", line):
                i += 1
                while i < len(lines) and re.match(r"^\s+- ", lines[i]):
                    scripts.append(lines[i].strip()[2:])
                    i += 1
                continue
            i += 1
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        scripts += [
            line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("ppaux ")
        ]
    return scripts


def _workspace(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # 'ppaux' as the recipes call it: this interpreter's ppaux, installed or not.
    (bin_dir / "ppaux").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ppaux_cli "$@"\n')
    (bin_dir / "ppaux").chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "NO_COLOR": "1",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
    }


def _run_script(script: str, tmp_path: Path, env: dict[str, str]) -> int:
    lines = [line for line in script.splitlines() if not line.startswith("pip install")]
    if not lines:
        return 0
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(lines)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), f"{script!r} exited {done.returncode}: {done.stderr}"
    assert "Traceback" not in done.stderr
    return done.returncode


def _check_outputs(tmp_path: Path) -> None:
    for path in tmp_path.iterdir():
        if path.suffix == ".sarif":
            jsonschema.Draft4Validator(SARIF_SCHEMA).validate(json.loads(path.read_text()))
        elif path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".xml":
            ET.parse(path)


def test_github_and_gitlab_payload_recipes_run_as_written(tmp_path):
    scripts = [
        s for s in _recipe_scripts("ci.md") if "fingerprint" not in s and "check-skew" not in s
    ]
    assert len(scripts) >= 6
    env = _workspace(tmp_path)
    codes = {script: _run_script(script, tmp_path, env) for script in scripts}
    assert codes["ppaux inspect fixtures/dumps/ --format github"] == 1  # the fixtures hold errors
    assert (
        codes["ppaux inspect fixtures/dumps/ --format sarif --output ppaux.sarif --fail-on never"]
        == 0
    )
    for name in ("ppaux.sarif", "gl-code-quality.json", "ppaux-junit.xml", "report.json"):
        assert (tmp_path / name).exists(), name
    _check_outputs(tmp_path)
    assert (tmp_path / "step-summary.md").read_text().startswith("## ppaux inspect\n")
    junit = ET.parse(tmp_path / "ppaux-junit.xml").getroot()
    assert int(junit.get("tests")) == len(list((REPO / "fixtures" / "dumps").iterdir()))


@pytest.mark.wheels
def test_skew_gate_recipe_runs_as_written(tmp_path):
    from wheels import sglang_wheel

    scripts = [s for s in _recipe_scripts("ci.md") if "fingerprint" in s or "check-skew" in s]
    assert len(scripts) == 2
    env = _workspace(tmp_path)
    wheel = sglang_wheel("0.5.23")
    (tmp_path / "wheels").mkdir()
    shutil.copy(wheel, tmp_path / "wheels" / wheel.name)
    # The recipe downloads the wheel itself; the test hands it the cached copy instead.
    fingerprints = "\n".join(
        line for line in scripts[0].splitlines() if not line.startswith("pip download")
    )
    assert _run_script(fingerprints, tmp_path, env) == 0
    assert _run_script(scripts[1], tmp_path, env) == 0


@pytest.mark.parametrize("page", ["index.md", "inspect.md"])
def test_command_examples_run(page, tmp_path):
    env = _workspace(tmp_path)
    scripts = _recipe_scripts(page)
    assert scripts
    for script in scripts:
        _run_script(script, tmp_path, env)


# -- output blocks: each command's ```text block is what it prints -------------------------------

#: The capture of docs/walkthrough.md, as the story (tests/test_capture_story.py) records it.
WALKTHROUGH_CAPTURE = "capture-20261202T102324Z-vm-25991-0001-pop.pt"


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


def _output_blocks(text: str) -> list[tuple[str, str, str]]:
    """(language, source, output) for every ```console block of one '$ ppaux ...' command, and
    every ```python block, that a ```text block follows."""
    fences = list(re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M))
    blocks = []
    for first, second in itertools.pairwise(fences):
        language, source = first.group(1), first.group(2)
        if (
            language not in ("console", "python")
            or second.group(1) != "text"
            or text[first.end() : second.start()].strip()
        ):
            continue
        if language == "console":
            lines = source.strip().splitlines()
            if len(lines) != 1 or not lines[0].startswith("$ ppaux "):
                continue
            source = lines[0][2:]
        blocks.append((language, source, second.group(2)))
    return blocks


def _check_blocks(
    blocks: list[tuple[str, str, str]], cwd: Path, env: dict[str, str], shown_dir: str
) -> None:
    for language, source, expected in blocks:
        argv = ["bash", "-c", source] if language == "console" else [sys.executable, "-c", source]
        done = subprocess.run(
            argv,
            cwd=cwd,
            env={**env, "COLUMNS": "80"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert "Traceback" not in done.stderr, (source, done.stderr)
        assert done.stdout.replace(str(cwd), shown_dir) == expected, source


@contextlib.contextmanager
def _stand_in(tmp_path: Path, shown_dir: str) -> Iterator[Path]:
    """A new directory for the page's ``shown_dir``, its path exactly as long where /tmp allows
    (``/tmp/`` and a prefix and mkdtemp's eight characters), so that the text a command prints
    there, the path in it, wraps where it wraps on the page; removed afterwards."""
    import tempfile

    pad = len(shown_dir) - len("/tmp/") - 8
    if pad < 1 or not os.path.isdir("/tmp"):
        folder = tmp_path / "ppaux"
        folder.mkdir()
        yield folder
        return
    folder = Path(tempfile.mkdtemp(prefix="p" * pad, dir="/tmp"))
    assert len(str(folder)) == len(shown_dir)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_walkthrough_can_be_followed_literally_on_the_shipped_capture(tmp_path):
    """Steps 2, 3 and 6 of the walkthrough, on the capture that ships in fixtures/walkthrough
    and copied as the page says, print exactly what the page shows."""
    text = (DOCS / "walkthrough.md").read_text(encoding="utf-8")
    shipped = REPO / "fixtures" / "walkthrough" / WALKTHROUGH_CAPTURE
    assert shipped.is_file()
    copy = "$ mkdir -p /var/tmp/ppaux && cp fixtures/walkthrough/capture-*.pt /var/tmp/ppaux/"
    assert copy in _section(text, "## 2. ")
    assert "\n$ cd /var/tmp/ppaux\n" in _section(text, "## 2. ")  # where step 3 runs
    env = _workspace(tmp_path)
    with _stand_in(tmp_path, "/var/tmp/ppaux") as folder:
        subprocess.run(
            ["bash", "-c", copy[2:].replace("/var/tmp/ppaux", str(folder))],
            cwd=REPO,
            check=True,
        )
        assert sorted(p.name for p in folder.iterdir()) == [WALKTHROUGH_CAPTURE]
        blocks = []
        for heading in ("## 2. ", "## 3. "):
            blocks += _output_blocks(_section(text, heading))
        assert [source for _, source, _ in blocks] == [
            "ppaux capture list --dir /var/tmp/ppaux",
            f"ppaux inspect {WALKTHROUGH_CAPTURE}",
        ]
        blocks[0] = (blocks[0][0], f"ppaux capture list --dir {folder}", blocks[0][2])
        _check_blocks(blocks, folder, env, "/var/tmp/ppaux")
        # Step 6 works on a copy in a directory of its own, which the page makes first.
        move = "\n$ mkdir -p ~/ppaux-fix && cd ~/ppaux-fix && cp /var/tmp/ppaux/"
        assert f"{move}{WALKTHROUGH_CAPTURE} .\n" in _section(text, "## 6. ")
        work = tmp_path / "ppaux-fix"
        work.mkdir()
        shutil.copy(folder / WALKTHROUGH_CAPTURE, work)
        _check_blocks(_output_blocks(_section(text, "## 6. ")), work, env, str(work))
        # The capture directory holds the capture and nothing else the page wrote.
        assert sorted(p.name for p in folder.iterdir()) == [WALKTHROUGH_CAPTURE]


@pytest.mark.torch
def test_fix_page_prints_what_it_shows(tmp_path):
    blocks = _output_blocks((DOCS / "fix.md").read_text(encoding="utf-8"))
    assert [language for language, _, _ in blocks] == ["python"] + ["console"] * 4
    env = _workspace(tmp_path)
    _check_blocks(blocks, tmp_path, env, str(tmp_path))


# -- the GitHub Action and the pre-commit hook, as docs/ci.md shows them ------------------------


def _yaml_blocks(page: str, containing: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if containing in b]


def _tool(name: str) -> str:
    """A command the test extra installs beside this interpreter."""
    return str(Path(sys.executable).parent / name)


def _lint(workflow: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """actionlint on ``workflow`` in a repository whose root holds ppaux's action.yml, so that
    ``uses: ./`` is checked against the action's inputs and outputs."""
    repo = tmp_path / "lint"
    (repo / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(REPO / "action.yml", repo / "action.yml")
    (repo / ".github" / "workflows" / "ppaux.yml").write_text(workflow, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return subprocess.run(
        [_tool("actionlint"), "-oneline", "-no-color"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_actionlint_accepts_the_action_and_the_recipe(tmp_path):
    (workflow,) = _yaml_blocks("ci.md", "uses: ./")
    done = _lint(workflow, tmp_path / "good")
    assert done.returncode == 0, done.stdout + done.stderr
    # The check is real: an input or output the action does not declare is refused.
    wrong = workflow.replace("sarif: ppaux.sarif", "sarif: ppaux.sarif\n          bogus: x")
    wrong += "      - run: echo ${{ steps.ppaux.outputs.nope }}\n"
    done = _lint(wrong, tmp_path / "bad")
    assert done.returncode == 1
    assert 'input "bogus" is not defined in action "ppaux"' in done.stdout
    assert 'property "nope" is not defined' in done.stdout


def _expand(value: str, context: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: context[m.group(1)], value)


def test_action_steps_run_as_the_runner_runs_them(tmp_path):
    """The composite steps of action.yml, run in order by bash with the runner's files and the
    inputs of the docs/ci.md recipe; ``actions/setup-python`` is this machine's Python."""
    import yaml
    from checkout import clean_env, copy_checkout

    (workflow,) = _yaml_blocks("ci.md", "uses: ./")
    step = next(
        s for s in yaml.safe_load(workflow)["jobs"]["payloads"]["steps"] if s.get("uses") == "./"
    )
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update({k: str(v) for k, v in step["with"].items()})
    source = copy_checkout(tmp_path / "action")  # github.action_path
    workspace = copy_checkout(tmp_path / "workspace")  # the checked-out repository
    files = {name: tmp_path / name for name in ("path", "output", "summary")}
    for path in files.values():
        path.write_text("")
    python_bin = tmp_path / "python-bin"  # what setup-python puts on PATH
    python_bin.mkdir()
    (python_bin / "python").symlink_to(getattr(sys, "_base_executable", sys.executable))
    (tmp_path / "runner-temp").mkdir()
    context = {f"inputs.{k}": v for k, v in inputs.items()}
    context.update(
        {"github.action_path": str(source), "runner.temp": str(tmp_path / "runner-temp")}
    )
    env = clean_env(tmp_path / "scratch", python_bin)
    env.update(
        GITHUB_PATH=str(files["path"]),
        GITHUB_OUTPUT=str(files["output"]),
        GITHUB_STEP_SUMMARY=str(files["summary"]),
    )
    codes = []
    for action_step in action["runs"]["steps"]:
        if "uses" in action_step:
            assert action_step["uses"].startswith("actions/setup-python@")
            continue
        condition = action_step.get("if")
        if condition is not None:
            assert condition == "inputs.sarif != ''"
            if not inputs["sarif"]:
                continue
        step_env = {**env, **{k: _expand(v, context) for k, v in action_step["env"].items()}}
        added = [line for line in files["path"].read_text().splitlines() if line]
        step_env["PATH"] = os.pathsep.join([*reversed(added), env["PATH"]])
        assert action_step["shell"] == "bash"
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", action_step["run"]],
            cwd=workspace,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert "Traceback" not in done.stderr
        codes.append((action_step["name"], done.returncode, done.stdout))
    names = [name for name, _, _ in codes]
    assert names == [
        "Install ppaux from the action's checkout",
        "SARIF log",
        "Annotations and job summary",
    ]
    assert [code for _, code, _ in codes] == [0, 0, 1]  # the bundled dumps hold errors
    annotations = codes[-1][2]
    assert "::error file=fixtures/dumps/aux_list.pt,title=PP101 aux-non-tensor::" in annotations
    assert "exit-code=1" in files["output"].read_text().splitlines()
    assert files["summary"].read_text().startswith("## ppaux inspect\n")
    sarif = json.loads((workspace / inputs["sarif"]).read_text())
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    assert any(r["ruleId"] == "PP101" for r in sarif["runs"][0]["results"])
    # ppaux came from the action's venv, not from this test run.
    assert files["path"].read_text().strip() == str(tmp_path / "runner-temp" / "ppaux-venv" / "bin")


def test_pre_commit_hook_recipe_runs_as_written(tmp_path):
    """The .pre-commit-config.yaml of docs/ci.md, pointed at a committed copy of this checkout,
    and the ``pre-commit try-repo`` line: the hook fails on a bad dump and passes a good one."""
    from checkout import clean_env, commit_all, copy_checkout

    ppaux_repo = copy_checkout(tmp_path / "ppaux")
    rev = commit_all(ppaux_repo)
    (config,) = _yaml_blocks("ci.md", "id: ppaux-inspect")
    config = re.sub(r"repo: \S+", f"repo: {ppaux_repo}", config)
    config = re.sub(r"rev: \S+", f"rev: {rev}", config)
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "fixtures" / "dumps" / "aux_list.pt", project / "bad.pt")
    shutil.copy(REPO / "fixtures" / "dumps" / "clean_output.pt", project / "good.pt")
    shutil.copy(REPO / "fixtures" / "dumps" / "aux_list.pt", project / "weights.BIN")
    shutil.copy(REPO / "fixtures" / "malicious" / "plain_pickle_os_system.pkl", project / "x.pkl")
    (project / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    commit_all(project)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "pre-commit").symlink_to(_tool("pre-commit"))
    env = clean_env(tmp_path / "scratch", tools)
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")

    def pre_commit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["pre-commit", *args], cwd=project, env=env, capture_output=True, text=True, timeout=600
        )

    good = pre_commit("run", "--files", "good.pt")
    assert good.returncode == 0 and "ppaux inspect" in good.stdout, good.stdout + good.stderr
    assert "Passed" in good.stdout
    bad = pre_commit("run", "--all-files")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "PP101 error bad.pt [__sampling_observer_output__.scores]" in bad.stdout
    # .bin and .pkl files are dumps too, whatever the case of the suffix.
    assert "PP101 error weights.BIN [__sampling_observer_output__.scores]" in bad.stdout
    assert re.search(r"^PP201 error x\.pkl", bad.stdout, re.M)
    # Findings only: no dump's table of keys, and nothing about the clean one.
    assert "(zip;" not in bad.stdout and "next_token_ids" not in bad.stdout
    assert not re.search(r"^PP\d+ \w+ good\.pt", bad.stdout, re.M)
    assert "0 input(s) not checked" in bad.stdout
    (line,) = [
        line
        for line in re.findall(r"```bash\n(.*?)```", (DOCS / "ci.md").read_text(), re.S)[
            -1
        ].splitlines()
        if "try-repo" in line
    ]
    tried = subprocess.run(
        ["bash", "-c", line.replace("PATH-TO-PPAUX", str(ppaux_repo))],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tried.returncode == 1 and "PP101 error bad.pt" in tried.stdout, tried.stderr
    tried_good = pre_commit("try-repo", str(ppaux_repo), "ppaux-inspect", "--files", "good.pt")
    assert tried_good.returncode == 0, tried_good.stdout + tried_good.stderr


def test_readme_says_which_torch_build_the_second_command_brings():
    text = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    # PyPI's torch for Linux x86_64 is the CUDA build; the README must not promise the CPU one.
    assert "installs the CPU build of torch" not in text
    assert "from PyPI's own index on Linux x86_64 it is the CUDA build" in text
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in text


@pytest.mark.parametrize("page", ["index.md", "ci.md", "gate.md", "walkthrough.md"])
def test_a_page_says_how_to_reach_ppaux_before_its_first_bare_command(page):
    text = (Path("docs") / page).read_text()
    commands = "inspect|triage|explain|rules|check-skew|fingerprint|capture|replay|diff|tensorize"
    bare = re.search(rf"^(\$ )?ppaux ({commands})\b", text, re.MULTILINE)
    assert bare is not None
    assert ".venv/bin/activate" in text[: bare.start()]


def test_the_rules_page_says_how_wide_its_sample_is():
    assert "120 columns wide" in Path("docs/rules.md").read_text()


def test_every_page_and_the_triage_steps_use_one_capture_directory():
    from ppaux.triage.stepdata import DEFAULT_CAPTURE_DIR

    named = set()
    for page in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        named |= set(re.findall(r"(?:PPAUX_CAPTURE_DIR=|capture list --dir )(/[^\s`]+)", text))
    # The walkthrough's second directory is the last stage's, beside the first.
    assert named == {"/var/tmp/ppaux", "/var/tmp/ppaux-last"}
    assert DEFAULT_CAPTURE_DIR == "/var/tmp/ppaux"


def test_ci_recipes_and_the_action_pin_one_major_of_each_action():
    # A reader copies one recipe: each GitHub action must be the same major everywhere.
    pinned: dict[str, set[str]] = {}
    for path in (DOCS / "ci.md", REPO / "action.yml"):
        text = path.read_text(encoding="utf-8")
        for action, version in re.findall(r"uses: ([\w./-]+)@(v\d+)", text):
            pinned.setdefault(action, set()).add(version)
    assert {"actions/checkout", "actions/setup-python"} <= set(pinned)
    assert "github/codeql-action/upload-sarif" in pinned
    assert {action: len(versions) for action, versions in pinned.items()} == dict.fromkeys(
        pinned, 1
    ), pinned


def test_the_gate_page_opens_with_every_command_that_gates():
    # docs/cli.md (generated from the CLI) gives each command's options; each that takes
    # --fail-on applies the gate, and the gate page's first sentence names it.
    reference = (DOCS / "cli.md").read_text(encoding="utf-8")
    gating = set()
    for section in re.split(r"^#+ ppaux ", reference, flags=re.M)[1:]:
        name, _, body = section.partition("\n")
        if "| `--fail-on " in body:
            gating.add(name.strip())
    assert {"inspect", "triage", "capture list"} <= gating
    page = (DOCS / "gate.md").read_text(encoding="utf-8")
    opening = page.split("\n\n")[1]
    named = set(re.findall(r"`([a-z][a-z -]*)`", opening.split(")")[0]))
    assert named == gating, (named, gating)
