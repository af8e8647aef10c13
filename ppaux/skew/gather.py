"""Gather every rank's fingerprint to rank 0 with torch.distributed, surviving dead ranks.

Each process connects to a c10d TCP store (torchrun's own store under torchrun, else one that
rank 0 serves at ``tcp://HOST:PORT`` or ``MASTER_ADDR:MASTER_PORT``), writes its host name and
its fingerprint there, and waits for rank 0's decision:

* every fingerprint arrived within the timeout: all ranks form a gloo process group (CPU only,
  no GPU needed) and all-gather the fingerprints over it, as JSON bytes in uint8 tensors
  (nothing is unpickled);
* some did not: rank 0 reports them missing, with their host when they got as far as saying it,
  and nobody waits on a collective that can never complete.

Rank 0 then publishes its exit code in the store and every rank exits with it. A rank that
loses rank 0 gives up after twice the timeout (plus a few seconds) with an error.

torch is imported inside the functions here, never at module import.
"""

from __future__ import annotations

import datetime
import os
import socket
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from ppaux.errors import PpauxError
from ppaux.skew.fingerprint import Fingerprint, FingerprintError, loads
from ppaux.skew.stage import MissingRank

if TYPE_CHECKING:
    from torch.distributed import Store

__all__ = ["GatherError", "Gathered", "Session", "SetupError", "connect"]

_PREFIX = "ppaux/check-skew/"
_POLL_S = 0.05
# How long ranks wait for each other's "alive" marks after a failed collective.
_ALIVE_GRACE_S = 2.0
# Most rank 0 waits for the others to read the exit code before it exits itself.
_DONE_WAIT_S = 10.0


class SetupError(PpauxError, ValueError):
    """The distributed options or environment are unusable (no rank, bad init method).

    The message names an option of :func:`connect` by its parameter name (``init_method``);
    ``options`` lists those it names, and :meth:`spelled` writes them as a front end spells
    them (the command line's ``--init-method``).
    """

    def __init__(self, template: str, *options: str) -> None:
        self.template = template
        self.options = options
        super().__init__(self.spelled({}))

    def spelled(self, names: Mapping[str, str]) -> str:
        """The message with each ``{option}`` of the template written as ``names`` spells it
        (the parameter's own name where ``names`` lacks it)."""
        text = self.template
        for option in self.options:
            text = text.replace("{" + option + "}", names.get(option, option))
        return text


class GatherError(PpauxError, RuntimeError):
    """Gathering failed at run time: the store or rank 0 could not be reached in time."""


@dataclass
class Gathered:
    """What rank 0 collected. Other ranks get an empty one: they only learn the exit code."""

    fingerprints: list[Fingerprint] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    missing: list[MissingRank] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    transport: str = "gloo"


def _import_torch() -> Any:
    with warnings.catch_warnings():
        # CPU wheels warn once when numpy is absent; nothing here uses numpy.
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch
        import torch.distributed as dist
    return torch, dist


def _int_option(value: int | None, env: str, what: str) -> int:
    if value is not None:
        return value
    raw = os.environ.get(env)
    if raw is None:
        raise SetupError(
            f"{what} unknown: run under torchrun, or pass {{init_method}}, {{rank}} and "
            "{world_size}",
            "init_method",
            "rank",
            "world_size",
        )
    try:
        return int(raw)
    except ValueError:
        raise SetupError(f"${env}={raw!r} is not a whole number") from None


def _address(init_method: str | None) -> tuple[str, int]:
    if init_method is None or init_method == "env://":
        host = os.environ.get("MASTER_ADDR")
        port = os.environ.get("MASTER_PORT")
        if not host or not port:
            raise SetupError(
                "MASTER_ADDR and MASTER_PORT are not set: run under torchrun, or pass "
                "{init_method} tcp://HOST:PORT",
                "init_method",
            )
        where = f"$MASTER_PORT={port!r}"
    else:
        parsed = urlparse(init_method)
        # The port as written: urlparse's .port raises a bare ValueError past 65535.
        netloc = parsed.netloc
        port = "" if netloc.endswith("]") or ":" not in netloc else netloc.rpartition(":")[2]
        if parsed.scheme != "tcp" or not parsed.hostname or not port:
            raise SetupError(
                f"{{init_method}} {init_method!r}: expected tcp://HOST:PORT or env://",
                "init_method",
            )
        host, where = parsed.hostname, f"{{init_method}} {init_method!r}"
    try:
        number = int(port)
    except ValueError:
        raise SetupError(f"{where}: the port is not a number", "init_method") from None
    if not 0 < number < 65536:
        raise SetupError(f"{where}: port {number} is out of range", "init_method")
    return host, number


class Session:
    """One process's part in a distributed check; see :func:`connect`."""

    def __init__(self, store: Store, rank: int, world_size: int, timeout: float) -> None:
        self.store = store
        self.rank = rank
        self.world_size = world_size
        self.timeout = timeout
        # Ranks that rank 0 waits for, after it published the exit code (see publish_exit).
        self._peers: set[int] = set()

    # -- store helpers -------------------------------------------------------------------------

    def _set(self, key: str, value: str) -> None:
        self.store.set(_PREFIX + key, value)

    def _has(self, key: str) -> bool:
        return bool(self.store.check([_PREFIX + key]))

    def _get(self, key: str) -> bytes:
        return bytes(self.store.get(_PREFIX + key))

    def _wait(self, key: str, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._has(key):
                return True
            time.sleep(_POLL_S)
        return self._has(key)

    # -- the protocol --------------------------------------------------------------------------

    def gather(self, local: Fingerprint) -> Gathered:
        """Send ``local`` to rank 0; on rank 0, return everything that arrived."""
        self._set(f"host/{self.rank}", local.host)
        self._set(f"fp/{self.rank}", local.dumps())
        if self.rank == 0:
            return self._gather_as_root(local)
        if not self._wait("decision", 2 * self.timeout + 5):
            raise GatherError(
                f"rank {self.rank}: rank 0 did not answer within {2 * self.timeout + 5:g} s; "
                "it is not gathering fingerprints, or it died"
            )
        if self._get("decision") == b"gloo":
            try:
                self._all_gather(local)
            except Exception:
                self._set(f"alive/{self.rank}", "1")
        return Gathered()

    def _gather_as_root(self, local: Fingerprint) -> Gathered:
        deadline = time.monotonic() + self.timeout
        arrived: set[int] = set()
        while True:
            arrived |= {
                r for r in range(self.world_size) if r not in arrived and self._has(f"fp/{r}")
            }
            if len(arrived) == self.world_size or time.monotonic() >= deadline:
                break
            time.sleep(_POLL_S)
        result = Gathered()
        if len(arrived) == self.world_size:
            self._set("decision", "gloo")
            try:
                texts = self._all_gather(local)
            except Exception as exc:
                return self._after_failed_collective(exc)
            for r, text in enumerate(texts):
                self._add(result, r, text)
            self._peers = set(range(1, self.world_size))
            return result
        self._set("decision", "store")
        result.transport = "store"
        self._peers = arrived - {0}
        for r in range(self.world_size):
            if r in arrived:
                self._add(result, r, self._get(f"fp/{r}"))
            else:
                host = (
                    self._get(f"host/{r}").decode("utf-8", "replace")
                    if self._has(f"host/{r}")
                    else None
                )
                where = f" (host {host})" if host else ""
                result.missing.append(
                    MissingRank(
                        r, host, f"rank {r}{where} sent no fingerprint within {self.timeout:g} s"
                    )
                )
        return result

    def _after_failed_collective(self, exc: BaseException) -> Gathered:
        self._set("alive/0", "1")
        time.sleep(_ALIVE_GRACE_S)
        result = Gathered(transport="store")
        for r in range(self.world_size):
            self._add(result, r, self._get(f"fp/{r}"))
            if r and self._has(f"alive/{r}"):
                self._peers.add(r)
            elif r:
                host = self._get(f"host/{r}").decode("utf-8", "replace")
                result.missing.append(
                    MissingRank(
                        r,
                        host,
                        f"rank {r} (host {host}) sent its fingerprint, then stopped answering "
                        f"({type(exc).__name__} in the gloo all-gather)",
                    )
                )
        return result

    def _add(self, result: Gathered, rank: int, text: bytes | str) -> None:
        source = f"rank {rank}"
        try:
            fingerprint = loads(text, source)
        except FingerprintError as exc:
            result.problems.append((source, exc.reason))
            return
        result.fingerprints.append(fingerprint)
        result.paths.append(f"{source} ({fingerprint.host})")

    def _all_gather(self, local: Fingerprint) -> list[bytes]:
        """All-gather every rank's fingerprint JSON over gloo, as bytes in uint8 tensors."""
        torch, dist = _import_torch()
        payload = local.dumps().encode("utf-8")
        group_store = dist.PrefixStore(_PREFIX + "pg", self.store)
        dist.init_process_group(
            backend="gloo",
            store=group_store,
            rank=self.rank,
            world_size=self.world_size,
            timeout=datetime.timedelta(seconds=self.timeout),
        )
        try:
            size = torch.tensor([len(payload)], dtype=torch.int64)
            sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(self.world_size)]
            dist.all_gather(sizes, size)
            longest = max(int(s.item()) for s in sizes)
            data = torch.zeros(longest, dtype=torch.uint8)
            data[: len(payload)] = torch.frombuffer(bytearray(payload), dtype=torch.uint8)
            received = [torch.zeros(longest, dtype=torch.uint8) for _ in range(self.world_size)]
            dist.all_gather(received, data)
            return [
                bytes(t[: int(n.item())].tolist()) for t, n in zip(received, sizes, strict=True)
            ]
        finally:
            dist.destroy_process_group()

    def publish_exit(self, code: int) -> None:
        """Rank 0: tell every rank the exit code, and wait (briefly) until they have read it.

        torchrun stops every worker of a node as soon as one exits with a failure, so rank 0
        leaves last: the others read the code and exit first (see :meth:`await_exit`).
        """
        self._set("exit", str(code))
        deadline = time.monotonic() + min(self.timeout, _DONE_WAIT_S)
        waiting = set(self._peers)
        while waiting and time.monotonic() < deadline:
            waiting = {r for r in waiting if not self._has(f"done/{r}")}
            if waiting:
                time.sleep(_POLL_S)

    def await_exit(self) -> int:
        """Other ranks: rank 0's exit code; :class:`GatherError` if it never comes.

        The caller should exit at once with it: rank 0 leaves as soon as every rank has read it.
        """
        if not self._wait("exit", 2 * self.timeout + 5):
            raise GatherError(f"rank {self.rank}: rank 0 did not publish a result in time")
        try:
            code = int(self._get("exit"))
        except ValueError:
            raise GatherError(f"rank {self.rank}: rank 0 published a malformed result") from None
        self._set(f"done/{self.rank}", "1")
        return code


def _resolve(host: str, port: int, init_method: str | None) -> None:
    """A host name that does not resolve is the option's fault, said once: torch's store would
    retry it until the timeout, writing a warning line per try."""
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        where = "$MASTER_ADDR" if init_method in (None, "env://") else "{init_method}"
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SetupError(
            f"{where}: host {host!r} cannot be resolved ({reason})", "init_method"
        ) from None


def connect(
    *,
    timeout: float,
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
) -> Session:
    """Join the check: under torchrun from its environment, else from the given options.

    Raises :class:`~ppaux.errors.TorchMissingError` where torch is not installed, before
    anything else, :class:`SetupError` for unusable options and :class:`GatherError` when the
    store cannot be reached within ``timeout`` seconds.
    """
    from ppaux.torch_probe import require_torch

    require_torch("gathering fingerprints over torch.distributed")
    if timeout <= 0:
        raise SetupError(f"{{timeout}} must be positive, not {timeout:g}", "timeout")
    rank = _int_option(rank, "RANK", "this process's rank")
    world_size = _int_option(world_size, "WORLD_SIZE", "the world size")
    if world_size < 1 or not 0 <= rank < world_size:
        raise SetupError(f"rank {rank} is not in a world of size {world_size}")
    host, port = _address(init_method)
    _resolve(host, port, init_method)
    _, dist = _import_torch()
    # torchrun serves a store of its own and tells its workers to use it.
    agent_store = init_method is None and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    serve = rank == 0 and not agent_store
    try:
        store = dist.TCPStore(
            host,
            port,
            world_size,
            is_master=serve,
            timeout=datetime.timedelta(seconds=timeout),
            wait_for_workers=False,
        )
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        action = "serve" if serve else "reach"
        raise GatherError(
            f"rank {rank}: could not {action} the store at {host}:{port} within {timeout:g} s "
            f"({first})"
        ) from None
    return Session(store, rank, world_size, timeout)
