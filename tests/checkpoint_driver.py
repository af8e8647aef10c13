"""Runs sglang's real PP output path on the last stage, with ppaux capture, once per scenario.

Run by tests/test_capture_checkpoints.py in a process of an sglang runtime (from
tests/sglang_runtime.py), where sglang's real ``scheduler_pp_mixin`` and ``parallel_state`` import.
sglang's own
``SchedulerPPMixin._pp_prepare_tensor_dict`` and ``_pp_send_dict_to_next_stage`` run bound to a
stand-in scheduler (the attributes those two methods read), and send through sglang's own
``GroupCoordinator.send_tensor_dict`` on a one-process group (for which sglang returns at once:
the message is looked at on the way in, nothing goes on a wire).

``python checkpoint_driver.py MODE DIRECTORY STEPS SCENARIO...``: MODE is ``install``
(``ppaux.capture.install()``), ``plugin`` (ppaux's hooks through sglang's real ``HookRegistry``)
or ``plugin+other`` (the same, after another plugin's AROUND hook on add that injects a value).
Each scenario writes into ``DIRECTORY/<scenario>``; a scenario named ``strict-<name>`` runs
``<name>`` with ``strict=True``. Prints one JSON object: the errors each scenario raised
(and, with MODE ``install``, the methods' parameter lists before and after ``install()`` is
called again once sglang is imported, under ``signatures``).

The ways a non-tensor gets in: ``subclass`` (a Scheduler subclass whose _pp_prepare_tensor_dict
writes a list), ``queue`` (code that edits the message in last_rank_comm_queue), ``transport``
(a wrapped send_tensor_dict that turns a tensor into a list), ``add_patch`` (a patched add that
no longer checks), ``other`` (the other plugin's hook, with MODE ``plugin+other``); ``healthy``
sends clean messages.
"""

import collections
import contextlib
import inspect
import json
import sys
from types import SimpleNamespace

import torch

MODE, DIRECTORY, STEPS = sys.argv[1], sys.argv[2], int(sys.argv[3])
SCENARIOS = sys.argv[4:]
PREFIX = "__sampling_observer_output__."
ADD_TARGET = "sglang.srt.sampling.sampling_observer_pp.add_auxiliary_output_to_pp_tensors"

from ppaux import capture  # noqa: E402

if MODE == "install":
    capture.install(f"{DIRECTORY}/{SCENARIOS[0]}")

import sglang.srt.distributed.parallel_state as ps  # noqa: E402
import sglang.srt.managers.scheduler_pp_mixin as mixin  # noqa: E402


def inject(original_fn, tensors, output):
    result = original_fn(tensors, output)
    tensors[PREFIX + "extra"] = "injected"
    return result


if MODE.startswith("plugin"):
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    from ppaux.capture.plugin import register_plugin_hooks
    from ppaux.capture.settings import CaptureConfig

    register_plugin_hooks(CaptureConfig(f"{DIRECTORY}/{SCENARIOS[0]}"))
    if MODE == "plugin+other":
        HookRegistry.register(ADD_TARGET, inject, HookType.AROUND)
    HookRegistry.apply_hooks()


def lax_add(tensors, output):
    for name, value in output.to_pp_tensors().items():
        tensors[PREFIX + name] = value


REAL_SEND = ps.GroupCoordinator.send_tensor_dict
REAL_ADD = mixin.add_auxiliary_output_to_pp_tensors


def custom_send_tensor_dict(self, tensor_dict, *args, **kwargs):
    for key, value in list(tensor_dict.items()):
        if key.startswith(PREFIX) and torch.is_tensor(value):
            tensor_dict[key] = value.tolist()
    return REAL_SEND(self, tensor_dict, *args, **kwargs)


class Output:
    """An auxiliary output: one tensor, or (for the patched add) a list add would refuse."""

    def __init__(self, scores):
        self.scores = scores

    def to_pp_tensors(self):
        return {"scores": self.scores}


class Group(ps.GroupCoordinator):
    """A one-process PP group: sglang's send_tensor_dict returns at once for world_size 1."""

    def __init__(self):
        self.world_size = 1
        self.rank = 0
        self.ranks = [0]


class Scheduler(mixin.SchedulerPPMixin):
    """What sglang's _pp_prepare_tensor_dict and _pp_send_dict_to_next_stage read."""

    def __init__(self):
        self._pp_spec_relay = False
        self.pp_group = Group()
        self.attn_tp_group = None
        self.require_attn_tp_allgather = False  # read by the send of 0.5.18 - 0.5.20
        self.pp_comm_stream_ctx = contextlib.nullcontext()
        self.last_rank_comm_queue = collections.deque()


class SubclassScheduler(Scheduler):
    def _pp_prepare_tensor_dict(self, result, batch):
        tensor_dict = super()._pp_prepare_tensor_dict(result, batch)
        tensor_dict[PREFIX + "scores"] = tensor_dict[PREFIX + "scores"].tolist()
        return tensor_dict


def edit_queue(scheduler):
    for _, message in scheduler.last_rank_comm_queue:
        message.tensors[PREFIX + "scores"] = [0.5, 0.5]


def run(scenario):
    scheduler = SubclassScheduler() if scenario == "subclass" else Scheduler()
    scores = [0.25, 0.75] if scenario == "add_patch" else torch.ones(2)
    raised = []
    for _ in range(STEPS):
        logits = SimpleNamespace(sampling_mask_output=None, auxiliary_device_output=Output(scores))
        result = SimpleNamespace(
            next_token_ids=torch.arange(3),
            accept_lens=None,
            next_draft_input=None,
            logits_output=logits,
        )
        batch = SimpleNamespace(return_logprob=False)
        try:
            prepared = scheduler._pp_prepare_tensor_dict(result, batch)
            scheduler.last_rank_comm_queue.append((None, SimpleNamespace(tensors=prepared)))
            if scenario == "queue":
                edit_queue(scheduler)
            _, message = scheduler.last_rank_comm_queue.popleft()
            scheduler._pp_send_dict_to_next_stage(
                message.tensors, async_send=True, msg_type="output"
            )
        except RuntimeError as error:
            raised.append(str(error))
            scheduler.last_rank_comm_queue.clear()
    return raised


out = {}
for name in SCENARIOS:
    strict = name.startswith("strict-")
    scenario = name.removeprefix("strict-")
    # install() again only changes the settings (also under the plugin's hooks).
    capture.install(f"{DIRECTORY}/{name}", strict=strict)
    if scenario == "add_patch":
        mixin.add_auxiliary_output_to_pp_tensors = lax_add
    if scenario == "transport":
        ps.GroupCoordinator.send_tensor_dict = custom_send_tensor_dict
    try:
        out[name] = run(scenario)
    finally:
        mixin.add_auxiliary_output_to_pp_tensors = REAL_ADD
        ps.GroupCoordinator.send_tensor_dict = REAL_SEND
if MODE == "install":
    # install() after sglang is imported: each method keeps its own parameter list.
    TARGETS = {
        "prepare": (mixin.SchedulerPPMixin, "_pp_prepare_tensor_dict"),
        "send_dict": (mixin.SchedulerPPMixin, "_pp_send_dict_to_next_stage"),
        "send": (ps.GroupCoordinator, "send_tensor_dict"),
        "recv": (ps.GroupCoordinator, "recv_tensor_dict"),
    }

    def signatures():
        return {
            hop: str(inspect.signature(owner.__dict__[name], follow_wrapped=False))
            for hop, (owner, name) in TARGETS.items()
        }

    def marked():
        return [
            hop
            for hop, (owner, name) in TARGETS.items()
            if getattr(owner.__dict__[name], "__ppaux_capture__", False)
        ]

    capture.uninstall()
    unmarked, before = marked(), signatures()
    capture.install(f"{DIRECTORY}/signatures")
    out["signatures"] = {
        "unmarked": unmarked,
        "before": before,
        "after": signatures(),
        "marked": marked(),
    }
print(json.dumps(out))
