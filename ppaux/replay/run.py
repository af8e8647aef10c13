"""``replay``: run the PP auxiliary transport on recorded payloads and report what happens.

For each tensor dict in each dump (or the dict and output of a ppaux capture):

1. the dict is read with the safe reader and its tensors are rebuilt with torch on the chosen
   device (:mod:`ppaux.replay.materialize`); values the reader left as placeholders stay
   non-tensors;
2. the last stage's send is emulated (:func:`ppaux.replay.roundtrip.sender_dict`): a validating
   sender runs ``add`` on the auxiliary values and may refuse them; a legacy sender writes them
   as they are;
3. the dict crosses the :class:`~ppaux.replay.protocol.Wire` the options name: none, sglang's
   ``send_tensor_dict``/``recv_tensor_dict`` emulated in process, a real two-process
   torch.distributed group, or sglang's own ``GroupCoordinator``;
4. rank 0 pops with a reference observer, then the popped output is added into a fresh dict and
   compared bit for bit with what was sent (:mod:`ppaux.replay.roundtrip`).

Steps 2 - 4 run with ppaux's reference transport, sglang's own module, or both (every
disagreement is reported). The jobs live in their own modules: the settings
(:mod:`~ppaux.replay.options`), what is resolved once (:mod:`~ppaux.replay.setup`), one dump's
replay (:mod:`~ppaux.replay.execution`), its results (:mod:`~ppaux.replay.results`), findings
PP401 - PP409 (:mod:`~ppaux.replay.findings`) and tables (:mod:`~ppaux.replay.tables`). The
result is a :class:`~ppaux.report.document.Report`: one result per dump (``outcome`` 'ok',
'error' or 'diverged', ``error`` the verbatim message or None), findings, a summary table and
per-payload tables.

This module does not import torch at import time; :func:`replay_paths` does, when it needs it:
with settings that cannot fail (device cpu, ppaux's own transport, no wire or the in-process
one), torch is imported when the first dump that holds something to replay is rebuilt, so a run
whose every input is unreadable, refused or holds no tensor dict never pays for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from ppaux.errors import DumpError, nested_past_recursion
from ppaux.replay.options import ReplayConfigError, ReplayOptions, timeout_fault
from ppaux.replay.results import DumpResult, ReplayData, ReplaySettings
from ppaux.replay.vocabulary import Impl, Transport
from ppaux.report import InputProblem, Report, ReportBuilder

if TYPE_CHECKING:
    from ppaux.replay.setup import Setup

__all__ = ["DETAIL_TABLES_UP_TO", "replay_paths"]

#: Beyond this many dumps the human view keeps only the summary table.
DETAIL_TABLES_UP_TO = 20


def replay_paths(
    paths: Iterable[str],
    options: ReplayOptions | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Replay every dump under ``paths`` (files and directories); one result per dump.

    ``options`` defaults to :class:`ReplayOptions()`. Raises
    :class:`~ppaux.replay.options.ReplayConfigError` for settings that cannot work here (CUDA
    asked for and absent, sglang not found, ...) before any dump is read. Unreadable dumps
    become problems; the others still run. ``progress(done, total)`` is called after each dump.
    Raises :class:`~ppaux.errors.TorchMissingError` where torch is not installed.
    """
    from ppaux.dump import collect_dumps
    from ppaux.replay.execution import NothingToReplay, replay_file
    from ppaux.replay.protocol import WireSetupError
    from ppaux.replay.setup import REFERENCE_INFO, prepare, runtime_info
    from ppaux.replay.tables import detail_tables, summary_table
    from ppaux.torch_probe import require_torch

    require_torch("replay")
    options = options if options is not None else ReplayOptions()
    fault = timeout_fault(options.timeout_s)
    if fault is not None:
        raise ReplayConfigError("timeout_s", str(options.timeout_s), fault)

    files, problems = collect_dumps(paths, options.limits)
    deferred = _Deferred(options) if _cannot_fail(options) else None
    setup = cast("Setup", deferred) if deferred is not None else prepare(options)
    report = ReportBuilder(command="replay", problems=list(problems))
    results: list[DumpResult] = []
    try:
        for index, path in enumerate(files, 1):
            try:
                result, findings = replay_file(path, setup)
            except NothingToReplay as exc:
                report.findings += exc.findings  # judged as inspect judges it
            except DumpError as exc:
                report.problems.append(InputProblem.of(exc))
            except WireSetupError as exc:  # the receiver, started on first use, did not join
                raise ReplayConfigError("transport", options.transport.value, exc.bare()).suggest(
                    *exc.suggestions
                ) from None
            except RecursionError:  # nested within max_depth, deeper than rebuilding can go
                error = nested_past_recursion(path, options.limits.max_depth, "rebuild and replay")
                report.problems.append(InputProblem(error.path, error.reason))
            else:
                results.append(result)
                report.findings += findings
            if progress is not None:
                progress(index, len(files))
    finally:
        if deferred is None or deferred.prepared:
            setup.wire.close()
    if deferred is not None and not deferred.prepared:
        # Nothing was rebuilt: the settings as they would have been resolved, without torch.
        device, impl_info = "cpu", {"reference": {**REFERENCE_INFO, "stock_releases": []}}
    else:
        device, impl_info = str(setup.device), setup.impl_info
    settings: ReplaySettings = {
        "device": device,
        "sender": options.sender.value,
        "transport": options.transport.value,
        "impl": options.impl.value,
        "all_gather": options.all_gather,
        "implementations": impl_info,
        "sglang_runtime": runtime_info(setup),
    }
    data: ReplayData = {"replay": settings, "results": [r.to_json() for r in results]}
    report.data.update(data)
    report.tables.append(summary_table(results, options, device))
    if len(results) <= DETAIL_TABLES_UP_TO:
        for result in results:
            report.tables += detail_tables(result)
    return report.build()


def _cannot_fail(options: ReplayOptions) -> bool:
    """Whether preparing ``options`` cannot raise a setting error (so it may wait for the first
    dump that needs it): the CPU, ppaux's own add and pop, no wire or the in-process one."""
    return (
        options.device.strip().lower() == "cpu"
        and options.impl == Impl.REFERENCE
        and options.transport in (Transport.NONE, Transport.WIRE)
        and options.sglang_path is None
        and options.all_gather >= 0
    )


class _Deferred:
    """A :class:`~ppaux.replay.setup.Setup` prepared (torch imported, the wire opened) on the
    first use of anything but its options: by the first dump that has something to rebuild."""

    def __init__(self, options: ReplayOptions) -> None:
        self.options = options
        self._setup: Setup | None = None

    @property
    def prepared(self) -> bool:
        """Whether a dump needed the setup."""
        return self._setup is not None

    def __getattr__(self, name: str) -> Any:
        from ppaux.replay.setup import prepare

        if self._setup is None:
            self._setup = prepare(self.options)
        return getattr(self._setup, name)
