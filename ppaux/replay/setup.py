"""What a replay resolves once, before any dump is read: the device, the implementations of
``add``/``pop`` that run, and the :class:`~ppaux.replay.protocol.Wire` the dicts cross.

Every setting that cannot work here raises :class:`~ppaux.replay.options.ReplayConfigError`
from :func:`prepare`, naming the setting. This module imports torch only in :func:`prepare`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ppaux.replay.options import ReplayConfigError, ReplayOptions
from ppaux.replay.vocabulary import Impl, Transport
from ppaux.suggestions import Setting
from ppaux.torch_probe import import_torch

if TYPE_CHECKING:
    from ppaux.replay.protocol import Wire

__all__ = ["REFERENCE_INFO", "Setup", "prepare", "runtime_info"]

#: Where ppaux's reference transport comes from, as :attr:`Setup.impl_info` gives it.
REFERENCE_INFO: dict[str, Any] = {
    "origin": "ppaux.replay.transport",
    "version": None,
    "sha256": None,
    "stock_releases": [],
}


@dataclass(frozen=True)
class Setup:
    """A run's resolved settings: ``impls`` maps 'reference' and/or 'sglang' to the modules whose
    ``add``/``pop`` run (in that order), ``impl_info`` says where each came from."""

    options: ReplayOptions
    device: Any
    impls: dict[str, Any]
    impl_info: dict[str, dict[str, Any]]
    wire: Wire


def prepare(options: ReplayOptions) -> Setup:
    """Resolve ``options``; the wire is opened (a two-process wire starts on first use)."""
    import_torch()
    from ppaux.replay import transport
    from ppaux.replay.distributed import WireSetupError
    from ppaux.replay.materialize import DeviceError, resolve_device
    from ppaux.replay.wiring import open_wire

    if options.all_gather < 0:
        raise ReplayConfigError(
            "all_gather", str(options.all_gather), "must be 0 (no group) or more"
        )
    if (
        options.sglang_path is not None
        and options.impl == Impl.REFERENCE
        and options.transport != Transport.SGLANG
    ):
        raise ReplayConfigError(
            "sglang_path",
            options.sglang_path,
            "only used with sglang's implementation (alone or beside the reference) or with "
            "the sglang transport",
        ).suggest(
            Setting("impl", Impl.SGLANG.value),
            Setting("impl", Impl.BOTH.value),
            Setting("transport", Transport.SGLANG.value),
        )
    try:
        device = resolve_device(options.device)
    except DeviceError as exc:
        raise ReplayConfigError("device", exc.value, exc.reason) from None
    impls: dict[str, Any] = {}
    info: dict[str, dict[str, Any]] = {}
    if options.impl in (Impl.REFERENCE, Impl.BOTH):
        impls["reference"] = transport
        info["reference"] = {**REFERENCE_INFO, "stock_releases": []}
    if options.impl in (Impl.SGLANG, Impl.BOTH):
        from ppaux.sglang_source import SglangNotFound, load_transport_module

        try:
            module = load_transport_module(options.sglang_path)
        except SglangNotFound as exc:
            if options.sglang_path is not None:
                raise ReplayConfigError("sglang_path", options.sglang_path, exc.reason) from None
            raise ReplayConfigError("impl", options.impl.value, f"sglang is {exc.reason}").suggest(
                Setting("sglang_path", what="an unpacked tree or a wheel")
            ) from None
        source = module.__ppaux_source__
        impls["sglang"] = module
        info["sglang"] = {
            "origin": source.origin,
            "version": source.version,
            "sha256": source.sha256,
            "stock_releases": list(source.stock_releases),
        }
    try:
        wire = open_wire(
            options.transport,
            device=device,
            all_gather=options.all_gather,
            timeout_s=options.timeout_s,
            sglang_path=options.sglang_path,
            implementations=impls,
        )
    except WireSetupError as exc:
        raise ReplayConfigError("transport", options.transport.value, exc.bare()).suggest(
            *exc.suggestions
        ) from None
    return Setup(options, device, impls, info, wire)


def runtime_info(setup: Setup) -> dict[str, Any] | None:
    """For the ``sglang`` transport: which sglang ran, from which file, what was emulated."""
    if setup.options.transport != Transport.SGLANG:
        return None
    import sys

    package = sys.modules.get("sglang")
    return {
        "version": getattr(package, "__version__", None),
        "file": getattr(setup.wire, "sglang_file", None),
        "all_gather_emulated": setup.options.all_gather > 1,
    }
