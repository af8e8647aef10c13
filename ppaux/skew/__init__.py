"""Whether the stages of a deployment can talk: fingerprints of a host (:mod:`.fingerprint`),
their comparison into findings (:mod:`.compare`) and a matrix (:mod:`.matrix`), gathering them
over torch.distributed (:mod:`.gather`) and the live-patch check.
"""

from typing import TYPE_CHECKING

from ppaux._lazy import lazy_exports

if TYPE_CHECKING:
    from ppaux.skew.compare import compare_stages
    from ppaux.skew.fingerprint import (
        Fingerprint,
        FingerprintError,
        collect,
        load,
        load_paths,
        loads,
    )
    from ppaux.skew.gather import GatherError, SetupError, connect
    from ppaux.skew.stage import MissingRank, Stage, make_stages

#: Each public name and the module that holds it, imported on first use.
_EXPORTS = {
    "Fingerprint": "fingerprint",
    "FingerprintError": "fingerprint",
    "collect": "fingerprint",
    "load": "fingerprint",
    "load_paths": "fingerprint",
    "loads": "fingerprint",
    "compare_stages": "compare",
    "Stage": "stage",
    "MissingRank": "stage",
    "make_stages": "stage",
    "connect": "gather",
    "SetupError": "gather",
    "GatherError": "gather",
}

__all__ = [
    "Fingerprint",
    "FingerprintError",
    "GatherError",
    "MissingRank",
    "SetupError",
    "Stage",
    "collect",
    "compare_stages",
    "connect",
    "load",
    "load_paths",
    "loads",
    "make_stages",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
