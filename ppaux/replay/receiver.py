"""The receiving process of the two-process wires: ``python -m ppaux.replay.receiver CONFIG``.

It is rank 1 of the group (sglang's PP rank 0): it joins the sender's store, receives each
message the way sglang's ``recv_tensor_dict`` does (or as the ``sglang`` wire's ``joined`` hook
says), runs the pop (and the add of the way back) asked for, and sends the outcome back, until
told to stop; a message the sender refused before sending any of it is announced as refused,
and the receiver waits for the next. A failure is reported through the store, then the process
exits 3.

This module imports torch.
"""

from __future__ import annotations

import datetime
import itertools
import json
import sys
import types
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from ppaux.replay.channel import (
    CONTROL_KEY,
    REPLY_KEY,
    Channel,
    clock,
    gloo_group,
    nccl_group,
    portable,
    synchronize,
    tcp_store,
)
from ppaux.replay.wire import WireError

__all__ = ["Receive", "next_control", "serve"]


Receive = Callable[[Channel, dict[str, Any]], dict[str, Any]]


def _receive_message(channel: Channel, control: dict[str, Any]) -> dict[str, Any]:
    """The message, received the way sglang's ``recv_tensor_dict`` does."""
    return channel.recv_tensor_dict(control["all_gather"])


def serve(
    config: dict[str, Any],
    *,
    joined: Callable[[Any, dict[str, Any]], Receive] | None = None,
    implementation: Callable[[str, dict[str, Any], dict[str, Any]], Any] | None = None,
) -> int:
    """Receive until told to stop; report a failure through the store, then exit 3.

    ``joined(store, config)``, called once the channel stands, returns how the message is
    received (default: ppaux's re-implementation of ``recv_tensor_dict``); ``implementation``
    resolves the name of the pop/add implementation asked for.
    """
    timeout = datetime.timedelta(seconds=config["timeout_s"])
    store = tcp_store(config["port"], timeout)
    device = torch.device(config["device"])
    if device.type == "cuda":
        # recv_tensor_dict allocates on the *current* device: make it this rank's GPU.
        torch.cuda.set_device(device)
    store.set("ready", "1")
    cpu_group = gloo_group(dist.PrefixStore("gloo", store), 1, timeout)
    device_group = (
        nccl_group(dist.PrefixStore("nccl", store), 1, timeout) if device.type == "cuda" else None
    )
    channel = Channel(0, cpu_group, device_group)
    receive_message = joined(store, config) if joined is not None else _receive_message
    resolve = implementation if implementation is not None else _implementation
    implementations: dict[str, Any] = {}
    for number in itertools.count(1):
        control = next_control(store, number, timeout)
        if control["op"] == "stop":
            return 0
        if control["op"] == "refused":
            # The sender refused that message before sending any of it: nothing to receive.
            continue
        try:
            if control["op"] == "raw":
                _serve_raw(channel, control, device.type)
            elif control["op"] == "deliver":
                _serve_delivery(channel, control, receive_message, device.type)
            else:
                _serve_dict(
                    channel,
                    control,
                    receive_message,
                    resolve(control["impl"], implementations, config),
                    device.type,
                )
        except Exception as exc:  # reported to the sender, whatever it was
            side = exc.side if isinstance(exc, WireError) else "receiver"
            error_type = exc.error_type if isinstance(exc, WireError) else type(exc).__name__
            message = (
                exc.message
                if isinstance(exc, WireError)
                else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            )
            key = exc.key if isinstance(exc, WireError) else None
            store.set(
                f"error/{control['seq']}",
                json.dumps(
                    {
                        "side": side,
                        "error_type": error_type,
                        "message": message,
                        "key": key if isinstance(key, (str, type(None))) else repr(key),
                    }
                ),
            )
            return 3
    return 0  # not reached: the count never ends


def next_control(store: dist.Store, number: int, timeout: datetime.timedelta) -> dict[str, Any]:
    """The sender's control message ``number`` (from 1), waited for as long as the sender
    lives: the time between two messages is the sender's own work (in a check, the target's
    methods, which the check's own clock bounds), not a transfer. Each wait of ``timeout``
    that ends without it is waited again; a sender that is gone (its store closed) raises."""
    key = f"{CONTROL_KEY}/{number}"
    while True:
        try:
            store.wait([key], timeout)
        except dist.DistStoreError:  # the wait timed out: the sender is still there
            continue
        break
    control: dict[str, Any] = json.loads(store.get(key).decode("utf-8"))
    store.delete_key(key)
    return control


def _implementation(name: str, cache: dict[str, Any], config: dict[str, Any]) -> Any:
    if name not in cache:
        if name == "sglang":
            from ppaux.sglang_source import load_transport_module

            cache[name] = load_transport_module(config["sglang_source"])
        else:
            from ppaux.replay import transport

            cache[name] = transport
    return cache[name]


def _serve_dict(
    channel: Channel,
    control: dict[str, Any],
    receive_message: Receive,
    module: types.ModuleType,
    device_type: str,
) -> None:
    from ppaux.replay.roundtrip import receive

    received = receive_message(channel, control)
    synchronize(device_type)
    received_at = clock()
    info, readded = receive(
        received,
        pop=module.pop_auxiliary_output_from_pp_tensors,
        add=module.add_auxiliary_output_to_pp_tensors,
    )
    reply: dict[str, Any] = {
        REPLY_KEY: {"info": info, "received_at": received_at, "readded": readded is not None}
    }
    reply.update(readded or {})
    channel.send_tensor_dict(reply)


def _serve_delivery(
    channel: Channel, control: dict[str, Any], receive_message: Receive, device_type: str
) -> None:
    received = receive_message(channel, control)
    synchronize(device_type)
    received_at = clock()
    channel.send_object({"received_at": received_at, "entries": portable(received)})


def _serve_raw(channel: Channel, control: dict[str, Any], device_type: str) -> None:
    for shape, dtype, kind in control["specs"]:
        target = torch.empty(
            shape, dtype=getattr(torch, dtype), device=device_type if kind == "cuda" else "cpu"
        )
        channel.recv_tensor(target)
    synchronize(device_type)
    channel.send_object({"received_at": clock()})


if __name__ == "__main__":
    raise SystemExit(serve(json.loads(sys.argv[1])))
