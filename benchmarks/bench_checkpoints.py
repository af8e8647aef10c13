"""Benchmark the checkpoints on healthy traffic: the last stage's path of one output message.

Target (docs/benchmarks.md, "checkpoints"): with capture on and every message healthy, a message
costs at most 1.05x what it costs with capture off, for ``install()`` and for the sglang plugin.

Per message, sglang's own code runs as on the last stage: ``_pp_prepare_tensor_dict`` (which
calls sglang's ``add_auxiliary_output_to_pp_tensors`` with an auxiliary output of two tensors),
the message is queued and taken from ``last_rank_comm_queue``, ``_pp_send_dict_to_next_stage``
(``msg_type="output"``) and ``GroupCoordinator.send_tensor_dict``, on a one-process group for
which sglang returns at once. By default no wire is timed: a real send costs far more than the
checkpoints, so this is the worst case for the ratio; it is also the best case for the caches,
which stay warm from one message to the next (``--evict BYTES`` cools them, as a real host's
work between two messages does, by copying a buffer of that size before each message). With
``--wire``, two processes on loopback run it with a real wire instead (where the other process
and the wire's threads cool the caches): the last stage sends each message through a real
``GroupCoordinator`` (gloo), and rank 0 receives it with sglang's ``recv_tensor_dict`` and pops
it with sglang's pop (both hooked too); the figures are per message on each side. Variants:
``off`` (sglang's functions as they are), ``install`` (the wrappers ``ppaux.capture.install()``
puts on add, pop and the four methods of the path: for the methods, with their own parameters),
``plugin`` (ppaux's hooks wrapped by sglang's own ``HookRegistry`` AROUND wrapper),
``off_plugin_empty`` (sglang's AROUND wrapper around a hook that only calls through),
``off_again`` (the noise floor) and ``off_busy`` (a control: capture off plus a busy wait of
5 µs per message on the last stage and 2 µs on rank 0, more than the checkpoints' own work);
``install_sender`` and ``install_receiver`` put install's wrappers on one side only. Wall and CPU
time (this process's, its threads included) are both reported. Each round times every variant
back to back (a block of ``--messages`` messages each; on the wire both ranks start each block
together), in an order shuffled anew each round; a ratio is the median of per-round ratios, with
the quartiles of those ratios, the 95 % bootstrap interval of their median, and the ratio of
all messages' time. Needs sglang's scheduler and parallel state importable (an sglang
runtime)::

    python tests/sglang_runtime.py 0.5.23     # prepares ~/.cache/ppaux/runtime/0.5.23
    R=~/.cache/ppaux/runtime/0.5.23
    PYTHONPATH=$R/sglang:$R/site:$R/standins python benchmarks/bench_checkpoints.py
    PYTHONPATH=$R/sglang:$R/site:$R/standins python benchmarks/bench_checkpoints.py \\
        --wire --rounds 400 --messages 50
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import inspect
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
import torch.distributed as dist

from ppaux.capture import hop_hooks
from ppaux.capture.hop_hooks import hook_for, method_wrapper, wrap
from ppaux.capture.settings import CaptureConfig
from ppaux.capture.state import STATE
from ppaux.sglang import ADD, POP


def _setup() -> tuple[Any, Any, Any, dict[str, Callable[..., Any]]]:
    import sglang.srt.distributed.parallel_state as ps
    import sglang.srt.managers.scheduler_pp_mixin as mixin

    originals = {
        "add": mixin.add_auxiliary_output_to_pp_tensors,
        "pop": mixin.pop_auxiliary_output_from_pp_tensors,
        "prepare": mixin.SchedulerPPMixin._pp_prepare_tensor_dict,
        "send_dict": mixin.SchedulerPPMixin._pp_send_dict_to_next_stage,
        "send": ps.GroupCoordinator.send_tensor_dict,
        "recv": ps.GroupCoordinator.recv_tensor_dict,
    }
    return ps, mixin, mixin.SchedulerPPMixin, originals


def _variants(originals: dict[str, Callable[..., Any]]) -> dict[str, dict[str, Any]]:
    from sglang.srt.plugins.hook_registry import HookType, _wrap_fn

    hook = {
        "add": hook_for(ADD, originals["add"]),
        "pop": hook_for(POP, originals["pop"]),
        "prepare": hop_hooks.around_prepare,
        "send_dict": hop_hooks.around_send_dict,
        "send": hop_hooks.around_send,
        "recv": hop_hooks.around_recv,
    }
    # What install() puts in place: for the methods, wrappers with the methods' own parameters.
    installed = {
        k: method_wrapper(k, f) if k in METHODS else wrap(f, hook[k]) for k, f in originals.items()
    }
    return {
        "off": dict(originals),
        "install": installed,
        "plugin": {k: _wrap_fn(f, hook[k], HookType.AROUND) for k, f in originals.items()},
        # sglang's own AROUND wrapper with a hook that only calls through: what the plugin's
        # form costs before ppaux's hooks do anything (capture off).
        "off_plugin_empty": {
            k: _wrap_fn(f, _empty_hook, HookType.AROUND) for k, f in originals.items()
        },
        "off_again": dict(originals),
        # A control: capture off, plus a busy wait about as long as the checkpoints' own work
        # (measured without a wire): 5 µs on the last stage, 2 µs on rank 0.
        "off_busy": dict(originals),
        # The same wrappers as install, on one side of the wire only.
        "install_sender": {k: installed[k] if k in _SENDER else f for k, f in originals.items()},
        "install_receiver": {k: f if k in _SENDER else installed[k] for k, f in originals.items()},
    }


def _empty_hook(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return original(*args, **kwargs)


#: The hops on methods (the others, add and pop, are module functions).
METHODS = ("prepare", "send_dict", "send", "recv")
#: The functions the last stage calls; rank 0 calls the others (recv, pop).
_SENDER = ("add", "prepare", "send_dict", "send")


def _group(rank: int) -> Any:
    """A real GroupCoordinator over gloo for PP ranks [0, 1], every communicator flag off."""
    from sglang.srt.distributed.parallel_state import GroupCoordinator

    parameters = inspect.signature(GroupCoordinator.__init__).parameters
    kwargs: dict[str, Any] = {
        "group_ranks": [[0, 1]],
        "local_rank": rank,
        "torch_distributed_backend": "gloo",
        "group_name": "pp",
    }
    for name in parameters:
        if name.startswith("use_"):
            kwargs[name] = False
    return GroupCoordinator(**kwargs)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--wire", action="store_true", help="two processes, a real gloo wire")
    parser.add_argument(
        "--evict",
        type=int,
        default=0,
        metavar="BYTES",
        help="on the last stage, copy a buffer of BYTES before each message, so that each one "
        "runs with cold caches, as between a real host's work (default 0: none)",
    )
    parser.add_argument(
        "--variants",
        default=None,
        help="comma-separated variants to time (default: all); off is always among them",
    )
    parser.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.wire and args.rank is None:
        return _launch(args)
    if args.rank is not None:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{args.port}",
            rank=args.rank,
            world_size=2,
            timeout=datetime.timedelta(seconds=600),
        )
    ps, mixin, mixin_class, originals = _setup()
    variants = _variants(originals)
    own_parameters = [
        hop
        for hop in METHODS
        if "*args" not in str(inspect.signature(variants["install"][hop], follow_wrapped=False))
    ]
    if args.variants:
        chosen = ["off", *(v for v in args.variants.split(",") if v != "off")]
        unknown = [v for v in chosen if v not in variants]
        if unknown:
            parser.error(f"unknown variant(s): {', '.join(unknown)}")
        variants = {name: variants[name] for name in chosen}

    class Output:
        def __init__(self) -> None:
            self.tensors = {"scores": torch.ones(32), "top": torch.zeros(32, 4)}

        def to_pp_tensors(self) -> dict[str, Any]:
            return self.tensors

    class Group(ps.GroupCoordinator):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            self.world_size = 1
            self.rank = 0
            self.ranks = [0]

    class Scheduler(mixin_class):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            self._pp_spec_relay = False
            self.pp_group = Group() if args.rank is None else _group(args.rank)
            self.attn_tp_group = None
            self.pp_comm_stream_ctx = contextlib.nullcontext()
            self.last_rank_comm_queue: collections.deque[Any] = collections.deque()

    scheduler = Scheduler()
    logits = SimpleNamespace(sampling_mask_output=None, auxiliary_device_output=Output())
    result = SimpleNamespace(
        next_token_ids=torch.arange(32),
        accept_lens=None,
        next_draft_input=None,
        logits_output=logits,
    )
    batch = SimpleNamespace(return_logprob=False)
    directory = tempfile.mkdtemp(prefix="ppaux-bench-")

    current = ["off"]

    def use(name: str) -> None:
        current[0] = name
        chosen = variants[name]
        mixin.add_auxiliary_output_to_pp_tensors = chosen["add"]
        mixin_class._pp_prepare_tensor_dict = chosen["prepare"]
        mixin_class._pp_send_dict_to_next_stage = chosen["send_dict"]
        ps.GroupCoordinator.send_tensor_dict = chosen["send"]
        ps.GroupCoordinator.recv_tensor_dict = chosen["recv"]
        mixin.pop_auxiliary_output_from_pp_tensors = chosen["pop"]
        STATE.activate(None if name.startswith("off") else CaptureConfig(directory))

    class Observer:
        def from_pp_tensors(self, tensors: dict[str, Any]) -> dict[str, Any]:
            return dict(tensors)

    observer = Observer()
    evict = (bytearray(args.evict), bytearray(args.evict)) if args.evict > 0 else None

    def messages(count: int) -> float:
        queue = scheduler.last_rank_comm_queue
        started = time.perf_counter()
        if args.rank == 0:  # rank 0: sglang's receive and pop
            for _ in range(count):
                received = scheduler.pp_group.recv_tensor_dict(all_gather_group=None)
                if current[0] == "off_busy":
                    _spin(2e-6)
                mixin.pop_auxiliary_output_from_pp_tensors(received, observer)
            return time.perf_counter() - started
        for _ in range(count):
            if evict is not None:
                evict[1][:] = evict[0]
            if current[0] == "off_busy":
                _spin(5e-6)
            prepared = scheduler._pp_prepare_tensor_dict(result, batch)
            queue.append((None, SimpleNamespace(tensors=prepared)))
            _, message = queue.popleft()
            work = scheduler._pp_send_dict_to_next_stage(
                message.tensors, async_send=True, msg_type="output"
            )
            # With one rank, sglang's send returns the dict itself (no work to wait for).
            if args.rank is not None:
                for item in work or ():
                    item.work.wait()
        return time.perf_counter() - started

    times: dict[str, list[float]] = {name: [] for name in variants}
    # CPU time of this process (all its threads, gloo's included) per message: the work a
    # variant adds, apart from the waiting on the wire that dominates the wall time.
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    for name in variants:  # warm up
        use(name)
        messages(200)
    for round_index in range(args.rounds):
        # A new order each round (the same on both ranks of a wire run, which must agree on
        # it): a variant never always follows the same one, so a slow spell of the machine or
        # of the wire does not always fall on the same variant.
        order = list(variants)
        random.Random(round_index).shuffle(order)
        for name in order:
            use(name)
            if args.rank is not None:
                # Both ranks start the variant's block together (outside the timed part), so
                # that neither times messages of the other's previous variant.
                dist.barrier()
            cpu_started = time.process_time()
            times[name].append(messages(args.messages) / args.messages)
            cpu[name].append((time.process_time() - cpu_started) / args.messages)
    use("off")
    written = STATE.stats().written
    out = {
        "side": {
            None: "last stage, no wire",
            0: "rank 0 (recv + pop)",
            1: "last stage (send over gloo)",
        }[args.rank],
        "sglang": sys.modules["sglang.srt.managers.scheduler_pp_mixin"].__file__,
        "messages_per_round": args.messages,
        "evict_bytes": args.evict,
        "rounds": args.rounds,
        "captures_written": written,
        # The methods install() wraps with their own parameters (the rest: generic wrappers).
        "install_own_parameters": own_parameters,
        "variants": {
            name: {
                "median_us": round(statistics.median(t) * 1e6, 3),
                "ratio": round(statistics.median(_ratios(t, times["off"])), 4),
                # The middle half of the per-round ratios: how far one round's ratio wanders.
                "cpu_median_us": round(statistics.median(cpu[name]) * 1e6, 3),
                "cpu_ratio": round(statistics.median(_ratios(cpu[name], cpu["off"])), 4),
                "ratio_iqr": [
                    round(q, 4) for q in statistics.quantiles(_ratios(t, times["off"]), n=4)[::2]
                ],
                # How far the median ratio itself may be off: the 95 % interval of the medians
                # of rounds drawn again with replacement (2,000 draws).
                "ratio_ci95": [round(q, 4) for q in _bootstrap(_ratios(t, times["off"]))],
                # All of a variant's messages against all of off's.
                "total_ratio": round(sum(t) / sum(times["off"]), 4),
            }
            for name, t in times.items()
        },
    }
    print(json.dumps(out, indent=2))
    return 0


def _spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def _bootstrap(ratios: list[float], draws: int = 2000) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the median of ``ratios`` resampled ``draws`` times."""
    chance = random.Random(0)
    medians = sorted(statistics.median(chance.choices(ratios, k=len(ratios))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def _ratios(times: list[float], baseline: list[float]) -> list[float]:
    return [a / b for a, b in zip(times, baseline, strict=True)]


def _launch(args: argparse.Namespace) -> int:
    """Start both ranks of the wire run, print their results as one JSON list."""
    port = _free_port()
    children = []
    for rank in (0, 1):
        command = [
            sys.executable,
            __file__,
            "--rank",
            str(rank),
            "--port",
            str(port),
            "--messages",
            str(args.messages),
            "--rounds",
            str(args.rounds),
            "--evict",
            str(args.evict),
            *(["--variants", args.variants] if args.variants else []),
        ]
        children.append(
            subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
        )
    results = []
    for child in children:
        stdout, _ = child.communicate(timeout=3600)
        if child.returncode != 0:
            return child.returncode
        results.append(json.loads(stdout))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
