"""The InfiniBand device NCCL's warnings name as the one that failed (``hca mlx5_3`` at a
completion's end, ``mlx5_3:1`` before an async event) reaches PP809's data and words and the
next steps, as a device argument of ``ibv_devinfo -d`` and ``ibstat``; a line of another shape,
or a name that is not a device's, names none. The log of NVIDIA/nccl#1905 is in
fixtures/logs/real (its README)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ppaux.triage import triage_paths
from ppaux.triage.ncclflight import flight_failure, ib_device

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "real"
HEAD = "host-a:238:1313 [0] transport/net_ib.cc:2451 "
COMPLETION = (
    HEAD + "NCCL WARN NET/IB: Got completion from peer 10.0.0.2<38081> with status=4 opcode=0 "
    "len=0 vendor err 83 (Send) hca {}"
)
ASYNC = HEAD + "NCCL WARN NET/IB : {}:1 async fatal event on QP (0x7f69f01519a8): port error"
DEVICES = st.from_regex(r"\A[a-z][a-z0-9_]{0,20}\Z")


def test_the_real_log_names_its_device_in_the_finding_and_the_steps():
    report = triage_paths([str(REAL / "nccl-1905-ib-async-fatal-qp-hca.log")])
    (no_root,) = [f for f in report.findings if f.code == "PP809"]
    assert no_root.extra["ib_device"] == "mlx5_ib0"
    assert "InfiniBand device mlx5_ib0" in no_root.message
    argvs = [tuple(s["argv"]) for s in report.data["steps"] if s["argv"]]
    assert ("ibv_devinfo", "-d", "mlx5_ib0") in argvs and ("ibstat", "mlx5_ib0") in argvs


def test_a_completion_without_a_device_keeps_the_steps_without_one():
    report = triage_paths([str(REAL / "nccl-1405-ib-completion-vendor-err-129.log")])
    (no_root,) = [f for f in report.findings if f.code == "PP809"]
    assert no_root.extra["ib_device"] is None
    argvs = [tuple(s["argv"]) for s in report.data["steps"] if s["argv"]]
    assert ("ibstat",) in argvs and not any(a[:2] == ("ibv_devinfo", "-d") for a in argvs)


@given(DEVICES)
def test_each_warning_shape_names_its_device(device):
    assert ib_device(COMPLETION.format(device)) == device
    assert ib_device(ASYNC.format(device)) == device
    said = flight_failure(COMPLETION.format(device))
    assert said is not None and said[1].endswith(f", device {device}")


@given(st.text(max_size=80))
def test_a_device_is_never_an_option_nor_spaced(text):
    # whatever follows 'hca ', the name taken starts with a letter and holds no space
    found = ib_device(COMPLETION.format(text))
    assert found is None or (found[0].isalpha() and found.isascii() and " " not in found)
    assert ib_device(text) is None or "NCCL WARN" in text
