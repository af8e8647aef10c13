"""What the first root of a triage says of the next steps (:func:`first_root`), how a
relaying process's later failure names the root it relayed (:func:`relayer_pointer`), and the
note of logs that hold no failure (:func:`no_failure_note`)."""

from __future__ import annotations

from typing import Any

from ppaux.text import counted, cut
from ppaux.triage.buildsteps import undefined_symbol
from ppaux.triage.configsteps import setting_program
from ppaux.triage.cutkinds import CUT_ROOT, cut_kind
from ppaux.triage.deathsteps import death_steps
from ppaux.triage.kinds import SHAPE_KERNEL, cut_in_setup, kind_of
from ppaux.triage.mpisteps import mpi_failure, mpi_steps
from ppaux.triage.portsteps import port_in_use, port_steps
from ppaux.triage.ppkeys import pp_key_error
from ppaux.triage.programsteps import kernel_steps, resource_limit, resource_steps, shape_failure
from ppaux.triage.records import Failure
from ppaux.triage.roots import place_of
from ppaux.triage.signalrecords import died_of_signal
from ppaux.triage.stepdata import Deployment, Lead, Step
from ppaux.triage.turbomindsteps import turbomind_memory, turbomind_memory_steps

__all__ = ["first_root", "lead_steps", "no_failure_note", "relayer_pointer"]


def first_root(root: Failure, deployment: Deployment, release: str | None) -> dict[str, Any]:
    """What the first incident's root says of the steps (:func:`next_steps`' arguments): a
    child torchrun recorded, a KeyError on a key of the PP message, a library that does not
    load, the program whose settings a configuration error is of, a traceback cut inside a
    communicator's set-up, the root's own steps (:func:`lead_steps`; a shape failure's, no
    kernel's fault: the shapes' steps in place of a kernel's, ``release`` the releases its
    frames fit)."""
    lead = lead_steps(root)
    if lead is None and kind_of(root) == SHAPE_KERNEL and shape_failure(root.error):
        lead = tuple(kernel_steps(deployment, release, shape=True)), frozenset({"shape-kernel"})
    return {
        "torchrun": torchrun_recorded(root),
        "pp_key": pp_key_error(root),
        "build": undefined_symbol(root),
        "setting": setting_program(root, deployment),
        "cut_setup": cut_in_setup(root),
        "lead": lead,
    }


def lead_steps(root: Failure) -> Lead | None:
    """The first root's own steps, said first, and the groups of steps they stand for: a
    process's death of a fault of its own (a core dump says where it died, never a comparison
    of the stages), a port another process holds (who holds it and another port, never the
    network's steps), an MPI call's error (MPI's steps, never NCCL's), Triton's resource limit
    (the kernel's configuration, never a rerun with launches made synchronous), a traceback cut
    where its last frames tell its kind (its whole log first); None for any other root."""
    if died_of_signal(root.exception, root.message):
        return tuple(death_steps(True, False)), frozenset({"compare"})
    if (port := port_in_use(root)) is not None:
        return tuple(port_steps(*port)), frozenset({"communication"})
    if mpi_failure(root):  # MPI's own steps, never NCCL's
        return tuple(mpi_steps()), frozenset({"communication"})
    if resource_limit(root.exception, root.message):  # no fault of a kernel that ran
        return tuple(resource_steps()), frozenset({"shape-kernel"})
    if turbomind_memory(root):  # lmdeploy's own allocator: its settings, never torch's
        return tuple(turbomind_memory_steps()), frozenset({"memory"})
    if cut_kind(root, cut_in_setup(root)) is not None:  # the kind told, the exception not
        return (Step(None, "any host", CUT_ROOT),), frozenset()
    return None


def torchrun_recorded(root: Failure) -> bool:
    """True for a root that is a child's exit torchrun recorded (its summary, its agent's
    line), the child's exception in no log."""
    return root.exception is None and "torchrun's" in (root.said or "")


def relayer_pointer(failure: Failure, root: Failure) -> str | None:
    """Where ``failure`` is of the process that relayed ``root`` (the root named by both, the
    relaying process first: 'EngineCore pid=273, VllmWorker-0'), what it follows: the failure
    of the other it relayed, never itself; else None."""
    who, named = cut(failure.who), cut(root.who)
    if not named.startswith(who + ", "):
        return None
    relayed = named[len(who) + 2 :]
    return f"what followed in that process after it relayed {relayed}'s failure at {place_of(root)}"


def no_failure_note(logs: int, lines: int) -> str:
    """The note of ``logs`` read (``lines`` lines in all) that hold no failure at all."""
    return (
        f"no failure found: no traceback, failure record or process's death in "
        f"{counted(logs, 'log')} ({counted(lines, 'line')} read)"
    )
