"""The sglang plugin in this Python environment: would sglang, started from here, capture?

:func:`plugin_state` reads entry-point metadata, sglang's files as text and the
``PPAUX_CAPTURE_*`` settings; it imports neither sglang nor torch.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ppaux.capture.hops import hop_availability
from ppaux.capture.settings import ENV_DIR, config_from_env
from ppaux.sglang import (
    ENTRY_POINT,
    HOOK_REGISTRY_FILE,
    PLUGIN_GROUP,
    PLUGIN_NAME,
    TRANSPORT_FILE,
)

__all__ = ["PluginState", "plugin_state"]


@dataclass(frozen=True)
class PluginState:
    """What decides whether the sglang plugin captures in this environment.

    ``reasons`` says why it would not (empty when it would); ``setting_error`` names an invalid
    ``PPAUX_CAPTURE_*`` value.
    """

    entry_point: str | None
    sglang_version: str | None
    sglang_location: str | None
    has_framework: bool
    has_transport: bool
    capture_dir: str | None
    sglang_plugins: str | None
    setting_error: str | None
    settings: dict[str, Any] | None
    reasons: tuple[str, ...]
    #: Each checkpoint hop: None when this sglang has its target, else why it is skipped.
    hops: dict[str, str | None] | None = None

    @property
    def would_activate(self) -> bool:
        """True when sglang started from this environment would capture."""
        return not self.reasons

    def to_json(self) -> dict[str, Any]:
        """The state as a JSON object."""
        return {
            "entry_point": self.entry_point,
            "installed": self.entry_point == ENTRY_POINT,
            "would_activate": self.would_activate,
            "reasons": list(self.reasons),
            "sglang_version": self.sglang_version,
            "sglang_location": self.sglang_location,
            "sglang_has_plugin_framework": self.has_framework,
            "sglang_has_transport": self.has_transport,
            "PPAUX_CAPTURE_DIR": self.capture_dir,
            "SGLANG_PLUGINS": self.sglang_plugins,
            "setting_error": self.setting_error,
            "settings": self.settings,
            "hops": self.hops,
        }


def _entry_point() -> str | None:
    try:
        found = importlib.metadata.entry_points(group=PLUGIN_GROUP)
    except Exception:  # broken metadata of some other distribution
        return None
    for entry in found:
        if entry.name == PLUGIN_NAME:
            return entry.value
    return None


def plugin_state(environ: Mapping[str, str] | None = None) -> PluginState:
    """Whether sglang, started with ``environ`` from this Python environment, would capture.

    Reads entry-point metadata and sglang's files as text; imports neither sglang nor torch.
    """
    from ppaux import sglang_source as sglang_module

    env = os.environ if environ is None else environ
    reasons = []
    entry = _entry_point()
    if entry is None:
        reasons.append(f"the {PLUGIN_NAME!r} entry point is not installed in this environment")
    elif entry != ENTRY_POINT:
        reasons.append(f"the {PLUGIN_NAME!r} entry point points at {entry!r}, not {ENTRY_POINT!r}")
    root = sglang_module.find_sglang_root()
    try:
        version = sglang_module.sglang_version(root) if root is not None else None
    except (OSError, ValueError, LookupError):  # an unreadable _version.py says nothing
        version = None
    package = root / "sglang" if root is not None else None
    has_framework = package is not None and (package / HOOK_REGISTRY_FILE).is_file()
    has_transport = package is not None and (package / TRANSPORT_FILE).is_file()
    if root is None:
        reasons.append("sglang is not installed in this environment")
    else:
        if not has_framework:
            reasons.append(
                f"sglang {version or '(unknown version)'} has no plugin framework "
                "(sglang.srt.plugins); use ppaux.capture.install()"
            )
        if not has_transport:
            reasons.append(
                f"sglang {version or '(unknown version)'} has no PP auxiliary "
                "transport (added in 0.5.19)"
            )
    directory = env.get(ENV_DIR, "").strip() or None
    if directory is None:
        reasons.append(f"{ENV_DIR} is not set")
    allowed = env.get("SGLANG_PLUGINS", "").strip() or None
    if allowed is not None and PLUGIN_NAME not in {x.strip() for x in allowed.split(",")}:
        reasons.append(f"SGLANG_PLUGINS={allowed!r} does not list {PLUGIN_NAME!r}")
    setting_error = None
    settings = None
    try:
        config = config_from_env(env)
    except ValueError as exc:
        setting_error = str(exc)
        reasons.append(f"invalid setting: {exc}")
    else:
        if config is not None:
            settings = {
                "directory": str(config.directory),
                "when": config.when,
                "max_files": config.max_files,
                "max_bytes": config.max_bytes,
                "sample_every": config.sample_every,
            }
            if config.strict:  # shown only when on, the default stays as it was
                settings["strict"] = True
    return PluginState(
        entry_point=entry,
        sglang_version=version,
        sglang_location=str(package) if package is not None else None,
        has_framework=has_framework,
        has_transport=has_transport,
        capture_dir=directory,
        sglang_plugins=allowed,
        setting_error=setting_error,
        settings=settings,
        reasons=tuple(reasons),
        hops=hop_availability(package) if package is not None and has_transport else None,
    )
