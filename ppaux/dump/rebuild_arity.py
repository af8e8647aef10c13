"""How many arguments torch's rebuild functions take: a pickle that calls one with another count
is refused by Python before torch reads anything, in either of torch.load's modes."""

from __future__ import annotations

from typing import Any

from ppaux.dump.pickle_vm import Machine
from ppaux.errors import TorchRefuses

__all__ = ["PARAMETER_ARGS", "check_arity"]


#: The positional parameters of torch's Parameter rebuilds (torch 2.0 to 2.14.1); torch calls
#: them with the pickle's arguments, in either mode, and Python refuses another count.
PARAMETER_ARGS = {
    "_rebuild_parameter": ("data", "requires_grad", "backward_hooks"),
    "_rebuild_parameter_with_state": ("data", "requires_grad", "backward_hooks", "state"),
}


def check_arity(m: Machine, name: str, args: tuple[Any, ...]) -> None:
    """Refuse (PP117) a call with another count of arguments, in Python's words."""
    wanted = PARAMETER_ARGS[name]
    if len(args) > len(wanted):
        why = f"takes {len(wanted)} positional arguments but {len(args)} were given"
    elif len(args) < len(wanted):
        missing = [repr(p).replace('"', "'") for p in wanted[len(args) :]]
        names = " and ".join(missing) if len(missing) < 3 else ", ".join(missing[:-1])
        names += f", and {missing[-1]}" if len(missing) >= 3 else ""
        plural = "argument" if len(missing) == 1 else "arguments"
        why = f"missing {len(missing)} required positional {plural}: {names}"
    else:
        return
    raise TorchRefuses(m.path, f"torch.load refuses the file: {name}() {why}")
