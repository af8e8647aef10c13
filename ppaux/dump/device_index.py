"""How torch reads the device index of a storage location ``NAME:N``: c10's device-string
parser (``Device(const std::string&)``, torch 2.1 to 2.14.1) refuses an index with a leading
zero or one past a C int (``std::stoi``), and cuts the rest to its 8-bit signed
``DeviceIndex``, -1 standing for no index. torch.save writes ``str(storage.device)``, an index
from 0 to 127 in canonical decimal; any other index is refused or read as another device. The
tests compare each reading with ``torch.device``."""

from __future__ import annotations

import re

__all__ = ["device_reading", "device_refusal", "parsed_index"]

_INDEXED = re.compile(r"(cuda|hpu|xpu|mtia|privateuseone):([0-9]+)")

#: The backends whose module has ``_utils._get_device_index`` (torch 2.13): torch.load's
#: ``_validate_device`` makes ``torch.device(name, index)`` of the parsed index, which refuses a
#: negative one.
_INDEX_CHECKED = ("cuda", "xpu", "mtia")


def parsed_index(digits: str) -> int | str | None:
    """The index c10's parser reads from ``digits`` (None: no index), or its refusal."""
    if len(digits) > 1 and digits.startswith("0"):
        return "Invalid device string"
    if len(digits) > 10 or int(digits) > 2**31 - 1:
        return "Could not parse device index"
    index = (int(digits) + 128) % 256 - 128
    return None if index == -1 else index


def device_refusal(location: str) -> str | None:
    """torch's reason for refusing a ``NAME:N`` location on any machine, or None."""
    found = _INDEXED.fullmatch(location)
    if found is None:
        return None
    name, digits = found.groups()
    index = parsed_index(digits)
    if index == "Invalid device string":
        return f"Invalid device string: '{location}'"
    if isinstance(index, str):
        return f"Could not parse device index '{digits}' in device string '{location}'"
    if name in _INDEX_CHECKED and index is not None and index < 0:
        return "Device index must not be negative"
    return None


def device_reading(location: str) -> str | None:
    """What torch reads a ``NAME:N`` location it takes as, where that is not ``NAME:N`` (an
    index torch.save never writes), or None."""
    found = _INDEXED.fullmatch(location)
    if found is None:
        return None
    name, digits = found.groups()
    index = parsed_index(digits)
    if isinstance(index, str) or index == int(digits):
        return None
    if index is None:
        return f"{name} without an index (torch takes the current {name} device)"
    if index < 0:
        # Only cuda, xpu and mtia check the index (device_refusal); torch.load hands the
        # other backends this one, which names no device.
        return f"{name}:{index}, a negative index that names no {name} device"
    return f"{name}:{index}"
