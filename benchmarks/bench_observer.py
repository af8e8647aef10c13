"""Benchmark ``ppaux check-observer``: a small observer's default check, and with sglang's wire.

Run::

    python benchmarks/bench_observer.py [--runs 11] [--runtime ~/.cache/ppaux/runtime/0.5.23]

It times whole processes (what a developer or a CI job waits for), interleaved run by run so that
a noisy neighbour slows every command alike, stdout and stderr to /dev/null, ``NO_COLOR=1``:

* ``ppaux check-observer fixtures/observers/entropy_good.py:EntropyObserver --format json``: the
  default check (emulated wire, batch sizes 1 and 4, 3 steps: 6 outputs down both paths);
* the same with ``--transport none`` and ``--transport torch-distributed`` (a second process
  joined over gloo);
* ``python -c "import torch"``: the floor every check pays;
* with ``--runtime DIR`` (a runtime prepared by the tests' runtime tier, see
  docs/sglang-runtime.md), the default check and ``--transport sglang`` under that runtime's
  ``PYTHONPATH``: sglang's own wire, ``SamplingBatchInfo`` and result processing.

It prints a Markdown table (median, min and max wall seconds, median CPU seconds of the child
and its children) and whether the targets hold: the default check at most 2 s and ``--transport
sglang`` at most 10 s median wall time. The load average before and after is printed: on a
shared machine wall time is not the work. The script imports nothing from ppaux.

``--cost`` measures instead what the check costs over the target's own work, for a trivial
observer (the worked example) and for one whose every output holds 64 MiB: the target's own
work is a plain script (no ppaux) that imports torch, loads the observer and makes every call
the check makes of it (``is_active``, ``before_grammar``, ``after_sample``, ``to_pp_tensors``,
``from_pp_tensors``, ``copy_to_host`` and ``consume`` on both paths, for batch sizes 1 and 4, 3
steps each); the check is ``ppaux check-observer TARGET --format json``. For each it prints the
wall seconds and the peak memory of the whole process tree (the sum of every process's
resident set, sampled every 10 ms from ``/proc``: ppaux's process and the target's child
together), median of ``--runs``, and the differences against the target: torch's import plus
1 s and 60 MB at most. ``--steps N`` (with ``--cost``) drives N steps per batch size instead of
3, for the trivial observer alone (its ``consume`` appends a value per step to each request).
``--hostile`` (with ``--cost``) times instead three observers whose cost grew with what they
do (a ``consume`` that rebuilds its list each step, a 5 MB message raised each step, a new 1 MB
key each step; ``--batch-size`` sets the batch sizes), and ``--baseline PYTHON`` the check of
another Python's ppaux (an earlier commit's) run by run beside this one.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = "fixtures/observers/entropy_good.py:EntropyObserver"
TARGET_DEFAULT_SECONDS = 2.0
TARGET_SGLANG_SECONDS = 10.0


def _commands(python: str, runtime: str | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    plain["NO_COLOR"] = "1"
    ppaux = [python, "-m", "ppaux_cli", "check-observer", TARGET, "--format", "json"]
    commands = {
        "check-observer (default: --transport wire)": (ppaux, plain),
        "check-observer --transport none": ([*ppaux, "--transport", "none"], plain),
        "check-observer --transport torch-distributed": (
            [*ppaux, "--transport", "torch-distributed"],
            plain,
        ),
        "python -c 'import torch' (floor)": ([python, "-c", "import torch"], plain),
    }
    if runtime is not None:
        root = Path(runtime).expanduser()
        env = dict(plain)
        env["PYTHONPATH"] = os.pathsep.join(
            str(root / part) for part in ("sglang", "site", "standins")
        )
        env["PYTHONNOUSERSITE"] = "1"
        env.setdefault("HF_HOME", str(root / "hf-home"))
        env.setdefault("TRITON_CACHE_DIR", str(root / "triton-cache"))
        commands[f"check-observer under {root.name}'s runtime (default transport)"] = (ppaux, env)
        commands[f"check-observer --transport sglang ({root.name})"] = (
            [*ppaux, "--transport", "sglang"],
            env,
        )
    return commands


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


_IN_PROCESS = """
import json, sys, time
import torch
from ppaux.observer import ObserverOptions, check_observer
walls, cpus = [], []
for _ in range(int(sys.argv[1])):
    wall, cpu = time.perf_counter(), time.process_time()
    report = check_observer(sys.argv[2], ObserverOptions(transport=sys.argv[3]))
    walls.append(time.perf_counter() - wall)
    cpus.append(time.process_time() - cpu)
    assert report.findings == [], report.findings
print(json.dumps([walls, cpus]))
"""


def _in_process(python: str, runs: int, transport: str, env: dict[str, str]) -> list[list[float]]:
    """Wall and CPU seconds of each ``check_observer`` call in one process (torch imported)."""
    import json

    done = subprocess.run(
        [python, "-c", _IN_PROCESS, str(runs), TARGET, transport],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    values: list[list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return values


#: An observer whose every output holds 64 MiB (16 Mi float32), the same on both paths.
BIG_OBSERVER = """
import torch

SIZE = 1 << 24


class BigHost:
    def __init__(self, values):
        self.values = values

    def consume(self, batch, commits):
        total = float(self.values[:8].sum())
        for req, commit in zip(batch.reqs, commits, strict=False):
            if commit is not None:
                req.customized_info = {"big": [total]}


class BigOutput:
    def __init__(self, values):
        self.values = values

    def copy_to_host(self, copy_tensor):
        return BigHost(copy_tensor(self.values))

    def to_pp_tensors(self):
        return {"big": self.values}


class BigObserver:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits.sum()

    def after_sample(self, state, token_ids):
        return BigOutput(torch.full((SIZE,), float(state)))

    def from_pp_tensors(self, tensors):
        return BigOutput(tensors["big"])
"""

#: The target's own work: every call the check makes of the observer, without ppaux.
OWN_WORK = """
import importlib.util, sys, types
import torch
spec = importlib.util.spec_from_file_location("target", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
observer = getattr(module, sys.argv[2])()
rank0 = getattr(module, sys.argv[2])()
info = types.SimpleNamespace()
for batch_size in [int(size) for size in sys.argv[4].split(",")]:
    reqs = [types.SimpleNamespace(customized_info=None) for _ in range(batch_size)]
    batch = types.SimpleNamespace(reqs=reqs)
    for step in range(int(sys.argv[3])):
        logits = torch.randn(batch_size, 32)
        assert observer.is_active(info)
        state = observer.before_grammar(logits, info)
        token_ids = torch.argmax(logits, -1)
        output = observer.after_sample(state, token_ids)
        commits = [object()] * batch_size
        output.copy_to_host(lambda t: t).consume(batch, commits)
        try:
            sent = {k: v.clone() for k, v in output.to_pp_tensors().items()}
        except Exception:  # a target whose to_pp_tensors raises: its own work ends there
            continue
        rank0.from_pp_tensors(sent).copy_to_host(lambda t: t).consume(batch, commits)
        del output, sent
"""

#: Observers that make the check's own work grow with what they do: ``consume`` rebuilding
#: each request's list (``old + [x]``) at every step, ``to_pp_tensors`` raising a 5 MB
#: message at every step, and ``to_pp_tensors`` naming its tensor with a new 1 MB key at every
#: step (the first fails the check, as it should: it is timed all the same).
HOSTILE_OBSERVERS = """
import torch

BIG = "x" * (5 << 20)


class Host:
    def __init__(self, values):
        self.values = values

    def consume(self, batch, commits):
        for req in batch.reqs:
            if req.customized_info is None:
                req.customized_info = {"v": []}
            req.customized_info = {"v": req.customized_info["v"] + [float(self.values[0])]}


class Output:
    def __init__(self, values):
        self.values = values

    def copy_to_host(self, copy_tensor):
        return Host(copy_tensor(self.values))

    def to_pp_tensors(self):
        return {"t": self.values}


class Rebuilding:
    def is_active(self, sampling_info):
        return True

    def before_grammar(self, logits, sampling_info):
        return logits.float().sum(-1)

    def after_sample(self, state, token_ids):
        return self.made(state)

    def from_pp_tensors(self, tensors):
        return self.made(next(iter(tensors.values())))

    made = Output


class Raising(Output):
    def to_pp_tensors(self):
        raise ValueError(BIG)


class Keyed(Output):
    def to_pp_tensors(self):
        return {BIG[: 1 << 20] + str(id(self)): self.values}


class MessageOf5MB(Rebuilding):
    made = Raising


class KeyOf1MB(Rebuilding):
    made = Keyed
"""


def _tree_rss(root: int) -> int:
    """Bytes resident in ``root`` and every process below it, now."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


def _peak(argv: list[str], env: dict[str, str], cwd: Path = REPO) -> tuple[float, int, float]:
    """Wall seconds, the peak resident bytes of the process tree of ``argv``, and the CPU
    seconds of the process and the descendants it waited for."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    peak = 0
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, _tree_rss(process.pid))
        time.sleep(0.01)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}")
    return wall, peak, usage.ru_utime + usage.ru_stime


def cost(
    python: str,
    runs: int,
    steps: int = 3,
    *,
    hostile: bool = False,
    batch_sizes: tuple[int, ...] = (1, 4),
    baseline: str | None = None,
    only: tuple[str, ...] = (),
) -> int:
    """The check's cost over the target's own work (see the module's docstring); with
    ``steps`` other than 3, of the trivial observer alone, over that many steps; with
    ``hostile``, of :data:`HOSTILE_OBSERVERS` instead (``only``: those of these class names).
    ``baseline``: another Python whose ppaux (an earlier commit's, say) is timed too, run by
    run with this one. Every run starts in a folder of its own, so that each Python imports
    its own ppaux."""
    import tempfile

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["NO_COLOR"] = "1"
    sizes = ",".join(str(size) for size in batch_sizes)
    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "big_observer.py"
        big.write_text(BIG_OBSERVER, encoding="utf-8")
        targets = {
            "trivial (entropy_good.py)": (str(REPO / TARGET.split(":")[0]), "EntropyObserver"),
            "64 MiB outputs per step": (str(big), "BigObserver"),
        }
        if steps != 3:
            del targets["64 MiB outputs per step"]
        if hostile:
            odd = Path(folder) / "hostile_observers.py"
            odd.write_text(HOSTILE_OBSERVERS, encoding="utf-8")
            targets = {
                f"consume rebuilds its list (old + [x]), batch {sizes}": (str(odd), "Rebuilding"),
                "to_pp_tensors raises a 5 MB message": (str(odd), "MessageOf5MB"),
                "to_pp_tensors names a new 1 MB key": (str(odd), "KeyOf1MB"),
            }
            if only:
                targets = {name: at for name, at in targets.items() if at[1] in only}
        floor = [python, "-c", "import torch"]
        print(
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, CPython "
            f"{platform.python_version()}, {os.cpu_count()} CPUs, {runs} runs, {steps} steps "
            f"per batch size, batch sizes {sizes}, load average {os.getloadavg()[0]:.2f} before\n"
        )
        print("| observer | run | median wall s | median CPU s | median peak MB (tree) |")
        print("|---|---|---|---|---|")
        floors = [_peak(floor, env) for _ in range(runs)]
        floor_wall = statistics.median(x[0] for x in floors)
        print(
            f"| - | `python -c 'import torch'` | {floor_wall:.3f} | "
            f"{statistics.median(x[2] for x in floors):.3f} | "
            f"{statistics.median(x[1] for x in floors) / 1e6:.0f} |"
        )
        met = True
        for name, (file, attr) in targets.items():
            own_argv = [python, "-c", OWN_WORK, file, attr, str(steps), sizes]
            check_argv = [python, "-m", "ppaux_cli", "check-observer", f"{file}:{attr}"]
            check_argv += ["--format", "json", "--steps", str(steps), "--fail-on", "never"]
            for size in batch_sizes:
                check_argv += ["--batch-size", str(size)]
            runs_of = {"the target's own work": own_argv, "`check-observer`": check_argv}
            if baseline is not None:
                runs_of["`check-observer` (baseline)"] = [baseline, *check_argv[1:]]
            samples: dict[str, list[tuple[float, int, float]]] = {run: [] for run in runs_of}
            for _ in range(runs):
                for run, argv in runs_of.items():
                    samples[run].append(_peak(argv, env, Path(folder)))
            medians = {}
            for run, values in samples.items():
                wall = statistics.median(x[0] for x in values)
                peak = statistics.median(x[1] for x in values)
                cpu = statistics.median(x[2] for x in values)
                medians[run] = (wall, peak, cpu)
                print(f"| {name} | {run} | {wall:.3f} | {cpu:.3f} | {peak / 1e6:.0f} |")
            (own_wall, own_peak, own_cpu) = medians["the target's own work"]
            for run in [run for run in medians if run.startswith("`check")]:
                (check_wall, check_peak, check_cpu) = medians[run]
                extra_mb = (check_peak - own_peak) / 1e6
                ok = check_wall - own_wall <= floor_wall + 1.0 and extra_mb <= 60
                if run == "`check-observer`":
                    met = met and ok
                print(
                    f"| {name} | {run} over the target | {check_wall - own_wall:+.3f} "
                    f"(target +{floor_wall + 1:.3f}) | {check_cpu - own_cpu:+.3f} | "
                    f"{extra_mb:+.0f} (target +60) |"
                )
        print(
            f"\nload average after {os.getloadavg()[0]:.2f}; targets "
            + ("met" if met else "NOT met")
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument(
        "--cost", action="store_true", help="the check's cost over the target's own work"
    )
    parser.add_argument(
        "--runtime", help="a prepared sglang runtime directory (for --transport sglang)"
    )
    parser.add_argument(
        "--steps", type=int, default=3, help="with --cost: steps per batch size (trivial only)"
    )
    parser.add_argument(
        "--hostile", action="store_true", help="with --cost: the observers whose cost grows"
    )
    parser.add_argument(
        "--batch-size", type=int, action="append", help="with --cost: a batch size (repeat)"
    )
    parser.add_argument(
        "--baseline", help="with --cost: another Python (another ppaux) to time beside this one"
    )
    parser.add_argument(
        "--only",
        action="append",
        help="with --hostile: one observer's class name (Rebuilding, MessageOf5MB, KeyOf1MB)",
    )
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    if args.cost:
        return cost(
            args.python,
            args.runs,
            args.steps,
            hostile=args.hostile,
            batch_sizes=tuple(args.batch_size or (1, 4)),
            baseline=args.baseline,
            only=tuple(args.only or ()),
        )
    commands = _commands(args.python, args.runtime)
    load_before = os.getloadavg()[0]
    for argv, env in commands.values():  # warm the caches once, untimed
        _time(argv, env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, (argv, env) in commands.items():
            samples[name].append(_time(argv, env))
    load_after = os.getloadavg()[0]
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, CPython "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, {args.runs} runs, load average "
        f"{load_before:.2f} before, {load_after:.2f} after\n"
    )
    print("| command | median s | min s | max s | median CPU s |")
    print("|---|---|---|---|---|")
    medians = {}
    for name, values in samples.items():
        walls = [w for w, _ in values]
        cpus = [c for _, c in values]
        medians[name] = statistics.median(walls)
        print(
            f"| `{name}` | {statistics.median(walls):.3f} | {min(walls):.3f} | {max(walls):.3f} "
            f"| {statistics.median(cpus):.3f} |"
        )
    print(
        "\nIn one process, torch already imported (the first call, then the median of the rest):\n"
    )
    print("| check_observer(...) | first wall s | median wall s | median CPU s |")
    print("|---|---|---|---|")
    plain = commands["check-observer (default: --transport wire)"][1]
    for transport in ("wire", "none", "torch-distributed"):
        walls, cpus = _in_process(args.python, args.runs + 1, transport, plain)
        print(
            f"| transport {transport} | {walls[0]:.3f} | {statistics.median(walls[1:]):.3f} "
            f"| {statistics.median(cpus[1:]):.3f} |"
        )
    default = medians["check-observer (default: --transport wire)"]
    floor = medians["python -c 'import torch' (floor)"]
    print(
        f"\ndefault check: {default:.3f} s median ({default - floor:.3f} s over the torch import "
        f"floor): target {TARGET_DEFAULT_SECONDS} s "
        + ("met" if default <= TARGET_DEFAULT_SECONDS else "NOT met")
    )
    for name, value in medians.items():
        if "--transport sglang" in name:
            print(
                f"--transport sglang: {value:.3f} s median: target {TARGET_SGLANG_SECONDS} s "
                + ("met" if value <= TARGET_SGLANG_SECONDS else "NOT met")
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
