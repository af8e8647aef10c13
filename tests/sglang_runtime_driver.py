"""Run sglang's own pipeline-parallel output path between processes on loopback, report as JSON.

Independent of ppaux (it imports only the standard library, torch and the sglang on
``sys.path``), so that what it reports is sglang's behaviour, not ppaux's. Run it with the
``PYTHONPATH`` of a prepared runtime (``tests/sglang_runtime.py``)::

    python tests/sglang_runtime_driver.py transport MESSAGE.json [--all-gather 2 | --one-rank-group]
    python tests/sglang_runtime_driver.py scheduler CASE... (none, tensor, list, oot-tensor)
        [--load-plugins] [--rank-env RANK:NAME=VALUE]...

The command starts the processes itself (``torch.distributed.init_process_group("gloo")`` on
127.0.0.1, a free port), waits for them and prints one JSON document on stdout (schema below).
It imports sglang's modules once and forks the processes from there (importing sglang costs
seconds of CPU per process; nothing of torch.distributed exists before the fork), so each rank
runs the same release code as a fresh interpreter would, from the same files.

``transport``
    Two processes (four with ``--all-gather 2``). Each builds a real
    ``sglang.srt.distributed.parallel_state.GroupCoordinator`` for the PP group (``[[0, 1]]``,
    or ``[[0, 2], [1, 3]]`` with the attention-TP groups ``[[0, 1], [2, 3]]``; with
    ``--one-rank-group``, ``[[0, 1]]`` with the one-rank attention-TP groups ``[[0], [1]]``, as
    sglang's scheduler has without attention TP). The last stage
    sends the message with ``send_tensor_dict(message, dst=0[, all_gather_group=attn_tp])``;
    the first stage receives it with ``recv_tensor_dict(src=1[, all_gather_group=attn_tp])``.
    MESSAGE.json (or ``-`` for stdin) is a list of ``[key, spec]`` pairs, spec being one of
    ``{"tensor": {"dtype": "float32", "values": [...], "shape": [...]}}`` (optional
    ``"transpose": true`` sends a non-contiguous view ``.t()``, ``"every": N`` the view
    ``[::N]`` of the flat values, ``"sparse": true`` its ``to_sparse()``; ``"per_rank": true``
    adds the sender's global rank to every element) or ``{"object": JSON}`` (sent as that Python
    object; ``{"tuple": [...]}`` inside it becomes a tuple).

``scheduler``
    Two processes. Each binds a stand-in scheduler, a subclass of the real
    ``SchedulerPPMixin`` holding only the attributes the methods read (``pp_group`` a real
    GroupCoordinator), and runs on the last stage the real ``_pp_prepare_tensor_dict``,
    ``_pp_send_dict_to_next_stage(..., msg_type="output")`` and ``_pp_commit_comm_work``, on rank
    0 the real ``_pp_recv_dict_from_prev_stage`` and ``_pp_prep_batch_result`` (which pops).
    The case says what the auxiliary entry is: ``none``; ``tensor`` (an observer output whose
    ``to_pp_tensors()`` gives ``{"scores": tensor}``, added by sglang's own
    ``add_auxiliary_output_to_pp_tensors``); ``list`` and ``oot-tensor`` (the stand-in's
    override of ``_pp_prepare_tensor_dict`` calls the real one, then its one out-of-tree line
    writes ``tensor_dict["__sampling_observer_output__.scores"]`` directly: a Python list, or
    a tensor).
    ``--load-plugins``: each process calls sglang's own ``sglang.srt.plugins.load_plugins()``
    once the mixin is imported, as sglang's ``run_scheduler_process`` does after its imports
    (the plugins registered under the entry-point group ``sglang.srt.plugins`` of the
    interpreter's environment run, and the hooks they register are applied).
    ``--rank-env RANK:NAME=VALUE`` sets an environment variable in one process only, before
    that (e.g. a plugin's setting on rank 0).

Output: ``{"mode", "sglang_version", "files": {module: path}, "world_size", "ranks": {"0":
{...}, ...}}``; each rank's entry has ``rc`` and what it reported: ``messages`` (each with
``sent``, ``received`` or ``error``) or ``cases`` (each with ``prepared``, ``sent``,
``received``, ``pop`` or ``error``, ``keys_after``, ``observer_calls``, ``accesses``: the
attributes of the stand-ins that sglang read and wrote), ``crash`` if the process failed. Status
3 means the sender failed and stopped. A tensor is described as ``{"kind": "tensor", "dtype",
"shape", "device", "contiguous", "values"}``, anything else as ``{"kind": "object", "type",
"value", "repr"}``.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import socket
import sys
import tempfile
import time
import traceback
from datetime import timedelta
from pathlib import Path

#: Every file this process compiled from source, where a pip install imports its ``.pyc``.
COMPILED: list[str] = []
_source_to_code = importlib.machinery.SourceFileLoader.source_to_code


def _recording_source_to_code(self, data, path, *args, **kwargs):
    COMPILED.append(str(path))
    return _source_to_code(self, data, path, *args, **kwargs)


importlib.machinery.SourceFileLoader.source_to_code = _recording_source_to_code

AUX_KEY = "__sampling_observer_output__.scores"
TIMEOUT_S = 240
PEER_GRACE_S = 5


# ----------------------------------------------------------------------------- descriptions


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        finite = value == value and value not in (float("inf"), float("-inf"))
        return value if finite else repr(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return repr(value)


def describe(value):
    import torch

    if isinstance(value, torch.Tensor):
        values = value.detach().cpu()
        if values.layout != torch.strided:
            values = values.to_dense()
        if values.is_complex():
            listed = _jsonable(values.tolist())
        elif values.dtype == torch.bool:
            listed = values.tolist()
        else:
            listed = _jsonable(values.tolist())
        return {
            "kind": "tensor",
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
            "device": value.device.type,
            "contiguous": value.is_contiguous(),
            "values": listed,
        }
    cls = type(value)
    return {
        "kind": "object",
        "type": f"{cls.__module__}.{cls.__qualname__}",
        "value": _jsonable(value),
        "repr": repr(value)[:2000],
    }


def describe_dict(tensor_dict):
    return [[key, describe(value)] for key, value in tensor_dict.items()]


def _object(spec):
    if isinstance(spec, dict) and set(spec) == {"tuple"}:
        return tuple(_object(item) for item in spec["tuple"])
    if isinstance(spec, list):
        return [_object(item) for item in spec]
    if isinstance(spec, dict):
        return {key: _object(item) for key, item in spec.items()}
    return spec


def build_message(pairs, rank):
    import torch

    message = {}
    for key, spec in pairs:
        if "tensor" in spec:
            t = spec["tensor"]
            dtype = getattr(torch, t["dtype"])
            tensor = torch.tensor(t["values"], dtype=dtype)
            if "shape" in t:
                tensor = tensor.reshape(t["shape"])
            if t.get("per_rank"):
                tensor = tensor + rank
            if t.get("transpose"):
                tensor = tensor.t()
            if t.get("every"):
                tensor = tensor[:: t["every"]]
            if t.get("sparse"):
                tensor = tensor.to_sparse()
            message[key] = tensor
        else:
            message[key] = _object(spec["object"])
    return message


# ----------------------------------------------------------------------------- sglang objects


def make_group(group_ranks, local_rank, name):
    """A real GroupCoordinator over gloo, every communicator flag off, whatever the release."""
    import inspect

    from sglang.srt.distributed.parallel_state import GroupCoordinator

    parameters = inspect.signature(GroupCoordinator.__init__).parameters
    kwargs = {
        "group_ranks": group_ranks,
        "local_rank": local_rank,
        "torch_distributed_backend": "gloo",
        "group_name": name,
    }
    for parameter in parameters:
        if parameter.startswith("use_"):
            kwargs[parameter] = False
    if "gloo_timeout" in parameters:
        kwargs["gloo_timeout"] = timedelta(seconds=TIMEOUT_S)
    return GroupCoordinator(**kwargs)


def _sglang_facts():
    import importlib.metadata

    import sglang.srt.distributed.parallel_state as parallel_state

    facts = {
        "sglang_version": importlib.metadata.version("sglang"),
        "files": {"sglang.srt.distributed.parallel_state": parallel_state.__file__},
        "cached": parallel_state.__cached__,
        "compiled": list(COMPILED),
    }
    mixin = sys.modules.get("sglang.srt.managers.scheduler_pp_mixin")
    if mixin is not None:
        facts["files"]["sglang.srt.managers.scheduler_pp_mixin"] = mixin.__file__
    import torch

    facts["torch"] = {"version": torch.__version__, "file": torch.__file__}
    # Which imported top-level modules are the runtime's stand-ins (they say so).
    facts["standins"] = sorted(
        name
        for name, module in list(sys.modules.items())
        if "." not in name and getattr(module, "__dict__", {}).get("PPAUX_STANDIN") is True
    )
    return facts


# ----------------------------------------------------------------------------- transport mode


def child_transport(rank, world, args, report):
    import torch

    messages = args["messages"]
    all_gather = args.get("all_gather", 1)
    if all_gather == 1:
        pp = make_group([[0, 1]], rank, "pp")
        attn_tp = make_group([[0], [1]], rank, "attn_tp") if args.get("one_rank_group") else None
    else:
        stages = world // all_gather
        pp = make_group(
            [[s * all_gather + i for s in range(stages)] for i in range(all_gather)], rank, "pp"
        )
        attn_tp = make_group(
            [[s * all_gather + i for i in range(all_gather)] for s in range(stages)],
            rank,
            "attn_tp",
        )
    report.update(
        {
            "pp_rank_in_group": pp.rank_in_group,
            "pp_world_size": pp.world_size,
            "is_first_rank": pp.is_first_rank,
            "is_last_rank": pp.is_last_rank,
            "messages": [],
        }
    )
    if attn_tp is not None:
        report["attn_tp_rank_in_group"] = attn_tp.rank_in_group
        report["attn_tp_world_size"] = attn_tp.world_size
    for pairs in messages:
        entry = {}
        if pp.is_last_rank:
            message = build_message(pairs, rank)
            entry["sent"] = describe_dict(message)
            report["messages"].append(entry)
            try:
                pp.send_tensor_dict(message, dst=0, all_gather_group=attn_tp)
            except Exception as error:  # the sender's own failure is a result, not a crash
                entry["error"] = {"type": type(error).__name__, "message": str(error)}
                # The receiver now waits for tensors that never come: stop here (rc 3), and the
                # parent ends the peers.
                report["stopped"] = True
                return
        else:
            received = pp.recv_tensor_dict(src=pp.world_size - 1, all_gather_group=attn_tp)
            entry["received"] = describe_dict(received)
            report["messages"].append(entry)
        _save(report)  # a process that fails later still reports the messages before
        torch.distributed.barrier()


# ----------------------------------------------------------------------------- scheduler mode


class _Recorder:
    """Records which of its own attributes are read (never methods of its class)."""

    def __init__(self, **attributes):
        object.__setattr__(self, "_reads", [])
        object.__setattr__(self, "_writes", [])
        for name, value in attributes.items():
            object.__setattr__(self, name, value)

    def __getattribute__(self, name):
        own = object.__getattribute__(self, "__dict__")
        if name in own and name not in ("_reads", "_writes"):
            reads = own["_reads"]
            if name not in reads:
                reads.append(name)
        return object.__getattribute__(self, name)

    def __setattr__(self, name, value):
        writes = object.__getattribute__(self, "_writes")
        if name not in writes:
            writes.append(name)
        object.__setattr__(self, name, value)


def _accesses(recorder):
    """What was read and written on ``recorder`` so far, without recording this access."""
    own = object.__getattribute__(recorder, "__dict__")
    return {"read": list(own["_reads"]), "written": list(own["_writes"])}


class ScoresDeviceOutput:
    """An observer's auxiliary device output (out-of-tree code by nature: a user's plugin)."""

    def __init__(self, scores):
        self.scores = scores

    def to_pp_tensors(self):
        return {"scores": self.scores}

    def copy_to_host(self, copy_tensor):
        return ScoresHostOutput(copy_tensor(self.scores))


class ScoresHostOutput:
    def __init__(self, scores):
        self.scores = scores


class ScoresObserver:
    def __init__(self):
        self.calls = []

    def from_pp_tensors(self, tensors):
        self.calls.append(sorted(tensors))
        return ScoresDeviceOutput(tensors["scores"])


class RecordingFutureMap:
    def __init__(self):
        self.stashed = []

    def stash(self, indices, payload):
        self.stashed.append((indices, payload))


def _standin_scheduler_class():
    from sglang.srt.managers.scheduler_pp_mixin import SchedulerPPMixin

    class StandInScheduler(_Recorder, SchedulerPPMixin):
        """The real mixin's methods, bound to an object holding only what they read."""

        def _pp_prepare_tensor_dict(self, result, batch):
            tensor_dict = SchedulerPPMixin._pp_prepare_tensor_dict(self, result, batch)
            scores = object.__getattribute__(self, "__dict__").get("out_of_tree_scores")
            if scores is not None:
                tensor_dict[AUX_KEY] = scores  # the one out-of-tree line
            return tensor_dict

    return StandInScheduler


def child_scheduler(rank, world, args, report):
    pp = make_group([[0, 1]], rank, "pp")
    attn_tp = make_group([[0], [1]], rank, "attn_tp")
    report["cases"] = []
    for case in args["cases"]:
        report["cases"].append(_scheduler_case(case, pp, attn_tp))
        _save(report)


def _scheduler_case(case, pp, attn_tp):
    from collections import defaultdict, deque
    from contextlib import nullcontext

    import torch
    from sglang.srt.layers.logits_processor import LogitsProcessorOutput
    from sglang.srt.managers import scheduler_pp_mixin
    from sglang.srt.model_executor.forward_batch_info import PPProxyTensors
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    observer = ScoresObserver()
    future_map = RecordingFutureMap()
    attributes = {
        "pp_group": pp,
        "attn_tp_group": attn_tp,
        "require_attn_tp_allgather": False,
        "_pp_tensor_dict_inbox": defaultdict(deque),
        "_pp_spec_relay": False,
        "pp_comm_stream": None,
        "pp_comm_stream_ctx": nullcontext(),
        "device_module": torch.get_device_module("cpu"),
        "device": "cpu",
        "tp_worker": _Recorder(model_runner=_Recorder(sampling_observer=observer)),
        "future_map": future_map,
    }
    scores = torch.tensor([0.25, 0.5, 0.75], dtype=torch.float32)
    if case == "list":
        attributes["out_of_tree_scores"] = [0.25, 0.5, 0.75]
    elif case == "oot-tensor":
        attributes["out_of_tree_scores"] = scores
    scheduler = _standin_scheduler_class()(**attributes)
    batch = _Recorder(
        return_logprob=False,
        spec_algorithm=SpeculativeAlgorithm.NONE,
        req_pool_indices=torch.tensor([4, 5, 6], dtype=torch.int64),
        input_ids=torch.tensor([1, 2, 3], dtype=torch.int64),
        spec_info=None,
    )
    tp_worker = object.__getattribute__(scheduler, "tp_worker")
    model_runner = object.__getattribute__(tp_worker, "model_runner")
    report = {"case": case, "is_first_rank": pp.is_first_rank, "is_last_rank": pp.is_last_rank}
    if pp.is_last_rank:
        from sglang.srt.managers.utils import GenerationBatchResult

        logits_output = LogitsProcessorOutput(next_token_logits=None)
        logits_output.auxiliary_device_output = (
            ScoresDeviceOutput(scores) if case == "tensor" else None
        )
        result = GenerationBatchResult(
            logits_output=logits_output,
            next_token_ids=torch.tensor([11, 12, 13], dtype=torch.int32),
        )
        tensor_dict = scheduler._pp_prepare_tensor_dict(result, batch)
        report["prepared"] = describe_dict(tensor_dict)
        work = scheduler._pp_send_dict_to_next_stage(
            tensor_dict, async_send=True, msg_type="output"
        )
        scheduler._pp_commit_comm_work(work)
        accesses = _snapshot(scheduler, model_runner, batch)
        report["sent"] = describe_dict(tensor_dict)
    else:
        received = scheduler._pp_recv_dict_from_prev_stage()
        report["recv_returned"] = type(received).__name__
        if isinstance(received, tuple):  # 0.5.20+: (tensor_dict, comm event)
            received = received[0]
        report["received"] = describe_dict(received)
        pp_outputs = PPProxyTensors(received)
        metadata = scheduler_pp_mixin.PPBatchMetadata(can_run_cuda_graph=False)
        try:
            output = scheduler._pp_prep_batch_result(batch, metadata, pp_outputs)
        except Exception as error:
            accesses = _snapshot(scheduler, model_runner, batch)
            report["error"] = {"type": type(error).__name__, "message": str(error)}
        else:
            accesses = _snapshot(scheduler, model_runner, batch)
            host = output.auxiliary_host_output
            report["pop"] = {
                "auxiliary_host_output": None if host is None else describe(host.scores),
                "next_token_ids": describe(output.next_token_ids),
                "stashed_bonus_tokens": [describe(p.bonus_tokens) for _, p in future_map.stashed],
                "batch_input_ids": describe(object.__getattribute__(batch, "input_ids")),
            }
        report["keys_after"] = list(pp_outputs.tensors)
        report["observer_calls"] = observer.calls
    report["accesses"] = accesses
    return report


def _snapshot(scheduler, model_runner, batch):
    return {
        "scheduler": _accesses(scheduler),
        "tp_worker": _accesses(object.__getattribute__(scheduler, "tp_worker")),
        "model_runner": _accesses(model_runner),
        "batch": _accesses(batch),
    }


# ----------------------------------------------------------------------------- processes


_out_path = None


def _save(report):
    """Write this process's report so far (atomically) where the parent reads it."""
    tmp = _out_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report))
    os.replace(tmp, _out_path)


def _child(mode, rank, world, port, args, out_path):
    import torch.distributed as dist

    global _out_path
    _out_path = out_path
    report = {}
    rc = 0
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=TIMEOUT_S),
        )
        if mode == "scheduler":
            import sglang.srt.managers.scheduler_pp_mixin  # noqa: F401

            os.environ.update(args.get("rank_env", {}).get(str(rank), {}))
            if args.get("load_plugins"):
                from sglang.srt.plugins import load_plugins

                load_plugins()
                report["load_plugins"] = True
        report.update(_sglang_facts())
        run = {"transport": child_transport, "scheduler": child_scheduler}[mode]
        run(rank, world, args, report)
        if report.get("stopped"):
            rc = 3
    except BaseException as error:  # report it; the parent decides
        report["crash"] = {
            "type": type(error).__name__,
            "message": str(error),
            "traceback": traceback.format_exc()[-4000:],
        }
        rc = 1
    finally:
        _save(report)
    if rc == 0 and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return rc


def _import_before_fork(mode):
    """Import what every rank imports, once, in the parent (before any process group)."""
    os.environ["OMP_NUM_THREADS"] = "1"
    # With LOCAL_SIZE equal to the group size, sglang's CPU all-gather of float tensors goes to
    # sgl-kernel's shared-memory op (on AMX or arm64 hosts); the PP path between hosts is gloo.
    os.environ.pop("LOCAL_SIZE", None)
    import sglang.srt.distributed.parallel_state
    import torch  # noqa: F401

    if mode == "scheduler":
        import sglang.srt.managers.scheduler_pp_mixin  # noqa: F401


def _fork_child(mode, rank, world, port, args, out_path, log_path):
    """Fork a process that runs :func:`_child` with its output in ``log_path``; its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    rc = 1
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        rc = _child(mode, rank, world, port, args, out_path)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


class _Forked:
    """A forked child, with the part of :class:`subprocess.Popen` that :func:`launch` uses."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self):
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self):
        if self.poll() is None:
            os.kill(self.pid, 9)


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(mode, world, args, timeout=TIMEOUT_S):
    """Start ``world`` child processes, wait, and return the combined report."""
    port = _free_port()
    _import_before_fork(mode)
    with tempfile.TemporaryDirectory(prefix="ppaux-sglang-driver-") as scratch:
        scratch = Path(scratch)
        children = []
        for rank in range(world):
            log = open(scratch / f"rank{rank}.log", "w")
            pid = _fork_child(
                mode,
                rank,
                world,
                port,
                args,
                scratch / f"rank{rank}.json",
                scratch / f"rank{rank}.log",
            )
            children.append((_Forked(pid), log))
        deadline = time.monotonic() + timeout
        failed_at = None
        while any(p.poll() is None for p, _ in children):
            now = time.monotonic()
            if failed_at is None and any(p.poll() not in (None, 0) for p, _ in children):
                failed_at = now
            if now > deadline or (failed_at is not None and now > failed_at + PEER_GRACE_S):
                for p, _ in children:
                    if p.poll() is None:
                        p.kill()
                break
            time.sleep(0.1)
        ranks = {}
        for rank, (p, log) in enumerate(children):
            p.wait()
            log.close()
            path = scratch / f"rank{rank}.json"
            entry = json.loads(path.read_text()) if path.exists() else {}
            entry["rc"] = p.returncode
            if p.returncode != 0:
                entry["log_tail"] = (scratch / f"rank{rank}.log").read_text()[-3000:]
            ranks[str(rank)] = entry
    facts = dict(next((r for r in ranks.values() if "sglang_version" in r), {}))
    for entry in ranks.values():
        for fact in ("sglang_version", "files", "torch", "standins", "cached", "compiled"):
            entry.pop(fact, None)
    return {
        "mode": mode,
        "args": args,
        "world_size": world,
        "sglang_version": facts.get("sglang_version"),
        "files": facts.get("files"),
        "torch": facts.get("torch"),
        "standins": facts.get("standins"),
        "cached": facts.get("cached"),
        "compiled": facts.get("compiled"),
        "ranks": ranks,
    }


def main(argv):
    if argv and argv[0] == "--child":
        mode, rank, world, port, args, out_path = argv[1:7]
        return _child(mode, int(rank), int(world), int(port), json.loads(args), Path(out_path))
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    transport = sub.add_parser("transport")
    transport.add_argument(
        "message",
        help='JSON file: a list of [key, spec] pairs, or {"messages": [list, ...]}'
        " sent one after the other; - for stdin",
    )
    transport.add_argument("--all-gather", type=int, default=1, choices=[1, 2])
    transport.add_argument("--one-rank-group", action="store_true")
    scheduler = sub.add_parser("scheduler")
    scheduler.add_argument("cases", nargs="+", choices=["none", "tensor", "list", "oot-tensor"])
    scheduler.add_argument("--load-plugins", action="store_true")
    scheduler.add_argument("--rank-env", action="append", default=[], metavar="RANK:NAME=VALUE")
    options = parser.parse_args(argv)
    if options.mode == "transport":
        text = sys.stdin.read() if options.message == "-" else Path(options.message).read_text()
        document = json.loads(text)
        messages = document["messages"] if isinstance(document, dict) else [document]
        world = 2 * options.all_gather
        args = {"messages": messages, "all_gather": options.all_gather}
        if options.one_rank_group:
            args["one_rank_group"] = True
        report = launch("transport", world, args)
    else:
        rank_env = {}
        for item in options.rank_env:
            rank, _, assignment = item.partition(":")
            name, _, value = assignment.partition("=")
            rank_env.setdefault(str(int(rank)), {})[name] = value
        args = {"cases": options.cases}
        if options.load_plugins:
            args["load_plugins"] = True
        if rank_env:
            args["rank_env"] = rank_env
        report = launch("scheduler", 2, args)
    json.dump(report, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0 if all(r["rc"] == 0 for r in report["ranks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
