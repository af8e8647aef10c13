"""One exception tree: every exception class of ppaux derives from PpauxError and from the
builtin its callers catch."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import ppaux
from ppaux.errors import PpauxError

# The builtin (beyond Exception) each exception class must also be; None where callers catch
# only the ppaux type. Written out, so that a new class or a changed base fails here.
EXPECTED = {
    "ppaux.errors.PpauxError": None,
    "ppaux.errors.PathError": None,
    "ppaux.errors.DumpError": ValueError,
    "ppaux.errors.LimitExceeded": ValueError,
    "ppaux.errors.ReadMismatch": ValueError,
    "ppaux.errors.ExecutableArchive": ValueError,
    "ppaux.errors.NotAsWritten": ValueError,
    "ppaux.errors.TorchRefuses": ValueError,
    "ppaux.errors.TorchMissingError": ImportError,
    "ppaux.errors.SettingError": ValueError,
    "ppaux.files.InputFileError": OSError,
    "ppaux.report.config.ConfigError": ValueError,
    "ppaux.report.selection.UnknownCodeError": ValueError,
    "ppaux.report.catalogue.UnknownRuleError": KeyError,
    "ppaux.sglang_source.tree.SglangPathError": ValueError,
    "ppaux.sglang_source.tree.UnreadableFile": OSError,
    "ppaux.sglang_source.loader.SglangNotFound": LookupError,
    "ppaux.sglang_source.logical_lines.Unsplittable": None,
    "ppaux.sglang_source.logical_lines.StatementTooLarge": ValueError,
    "ppaux.sglang_source.statement_parts.Found": None,
    "ppaux.skew.fingerprint.FingerprintError": ValueError,
    "ppaux.skew.fingerprint._Invalid": None,
    "ppaux.skew.gather.SetupError": ValueError,
    "ppaux.skew.gather.GatherError": RuntimeError,
    "ppaux.capture.directory.CaptureDirError": ValueError,
    "ppaux.replay.materialize.DeviceError": ValueError,
    "ppaux.replay.materialize.MaterializeError": ValueError,
    "ppaux.replay.options.ReplayConfigError": ValueError,
    "ppaux.replay.execution.NothingToReplay": ValueError,
    "ppaux.replay.roundtrip.SenderRefused": None,
    "ppaux.replay.wire.WireError": RuntimeError,
    "ppaux.replay.protocol.WireSetupError": RuntimeError,
    "ppaux.guard.PpTensorsError": TypeError,
    "ppaux.guard.NotTensorizable": TypeError,
    "ppaux.files.OutputPathError": ValueError,
    "ppaux.triage.sources.LogOpenError": OSError,
    "ppaux.triage.sources.NoLogLines": OSError,
    "ppaux.triage.zones.TriageConfigError": ValueError,
    "ppaux.dump.digests.NotCompared": None,
    "ppaux.dump.weights_only._Stop": None,
    "ppaux.observer.target.TargetError": ValueError,
    "ppaux.observer.options.ObserverConfigError": ValueError,
    "ppaux.observer.drive.HookFailure": None,
    "ppaux.observer.digests.NotCompared": None,
    "ppaux.observer.handcopy.Stuck": None,
}

_BUILTINS = (ValueError, OSError, LookupError, KeyError, RuntimeError, TypeError)


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(ppaux.__path__, "ppaux."):
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


@pytest.mark.torch  # the replay wing's modules import torch
def test_every_exception_class_is_in_the_tree():
    classes = _exception_classes()
    # Warnings are not errors: the ones ppaux emits (pytest lists them) are named here on their own.
    warnings = sorted(name for name, cls in classes.items() if issubclass(cls, Warning))
    assert warnings == [
        "ppaux.testing.assertions.LeftRunningWarning",
        "ppaux.testing.assertions.NotComparedWarning",
        "ppaux.testing.assertions.NothingCheckedWarning",
        "ppaux.testing.assertions.RankZeroNotApartWarning",
    ]
    assert all(issubclass(classes[name], UserWarning) for name in warnings)
    classes = {name: cls for name, cls in classes.items() if name not in warnings}
    assert sorted(classes) == sorted(EXPECTED)
    for name, cls in classes.items():
        assert issubclass(cls, PpauxError), name
        builtin = EXPECTED[name]
        if builtin is None:
            assert not issubclass(cls, _BUILTINS), name
        else:
            assert issubclass(cls, builtin), name


def test_the_names_stay_importable_where_they_were():
    from ppaux.report.catalogue import UnknownRuleError
    from ppaux.report.selection import UnknownCodeError

    assert str(UnknownCodeError("PPX")) == "'PPX' matches no rule code; 'ppaux rules' lists them"
    assert str(UnknownRuleError("PP999")) == "unknown rule code 'PP999'; 'ppaux rules' lists them"
