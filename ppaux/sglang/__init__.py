"""Everything ppaux knows of sglang itself: the names and paths its PP messages and files
use (:mod:`.names`), finding and reading an sglang tree or wheel (:mod:`.tree`), loading its
transport module (:mod:`.loader`), source digests, the capability analysis and the release table.

Torch-free; nothing here imports sglang's package.
"""

from ppaux._lazy import lazy_exports

_EXPORTS = {
    "OUTPUT_PREFIX": "names",
    "MSG_TYPE_KEY": "names",
    "OUTPUT_MSG_TYPE": "names",
    "PROXY_KEYS": "names",
    "aux_name": "names",
    "SglangTree": "tree",
    "locate": "tree",
    "load_transport_module": "loader",
    "find_sglang_root": "loader",
    "sglang_version": "loader",
    "SglangNotFound": "loader",
    "TRANSPORT_SHA256": "loader",
    "Capability": "capability",
    "analyse": "capability",
    "analyse_tree": "capability",
    "families": "releases",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
