"""A port another process holds (``Address already in use``, ``EADDRINUSE``): nothing on the
network failed, so the steps find who holds the port (``ss -ltnp 'sport = :N'``, N from the
log, as one argument) and give the next run another port by the flag of the program that chose
it, never NCCL's network steps; ``explain`` looks there first too. The real logs:
megatron-343 (no port named, a job's own MASTER_PORT) and vllm-39015 (torchrun's agent, port
29500). Expectations by hand."""

from __future__ import annotations

from pathlib import Path

from helpers import cli

from ppaux.triage import triage_paths

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"


def _steps(path: Path) -> list[tuple[tuple[str, ...] | None, str]]:
    report = triage_paths([str(path)])
    steps = report.data["steps"]
    assert isinstance(steps, list)
    return [(tuple(s["argv"]) if s["argv"] else None, str(s["comment"] or "")) for s in steps]


def test_torchrun_s_store_on_a_held_port_names_the_port_and_torchrun_s_flags() -> None:
    steps = _steps(REAL / "vllm-39015-torchrun-agent-eaddrinuse.log")
    argvs = [argv for argv, _ in steps if argv]
    assert ("ss", "-ltnp", "sport = :29500") in argvs
    words = " ".join(comment for _, comment in steps)
    assert "port 29500 is already in use on this host" in words
    assert "--master-port" in words and "--rdzv-endpoint" in words
    assert not any(argv[1].startswith(("NCCL_", "TORCH_NCCL_")) for argv in argvs if len(argv) > 1)


def test_a_held_port_the_log_does_not_name_lists_every_listener() -> None:
    steps = _steps(REAL / "megatron-343-stripped-address-in-use.log")
    assert ("ss", "-ltnp") in [argv for argv, _ in steps]
    assert "MASTER_PORT" in " ".join(comment for _, comment in steps)


def test_sglang_s_held_port_names_sglang_s_flags(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-03-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/srv/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process\n'
        "    init_distributed_environment()\n"
        "[2026-03-01 10:00:00 TP0] torch.distributed.DistNetworkError: The server socket has "
        "failed to listen on any local network address. port: 5000, useIpv6: false, code: -98, "
        "name: EADDRINUSE, message: address already in use\n"
    )
    steps = _steps(log)
    assert ("ss", "-ltnp", "sport = :5000") in [argv for argv, _ in steps]
    assert "--dist-init-addr" in " ".join(comment for _, comment in steps)


def test_explain_looks_at_the_port_first() -> None:
    said = cli("explain", "RuntimeError: Address already in use").output
    assert "check which process holds the port (ss -ltnp)" in said
    assert "set NCCL_DEBUG=INFO" not in said.splitlines()[0]


# uvicorn's words when sglang's HTTP port is taken (lower case, the address as Python's pair).
UVICORN = (
    "OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
    "address already in use"
)


def test_an_http_server_s_held_port_is_named_from_pythons_address_pair(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-12-03 14:56:07] Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/sglang/launch_server.py", line 10, in <module>\n'
        "    launch_server(args)\n" + UVICORN + "\n"
    )
    steps = _steps(log)
    assert ("ss", "-ltnp", "sport = :30000") in [argv for argv, _ in steps]
    assert "port 30000 is already in use" in " ".join(comment for _, comment in steps)


def test_explain_looks_at_the_port_first_whatever_the_words_kind() -> None:
    said = cli("explain", UVICORN).output
    assert "check which process holds the port (ss -ltnp)" in said
