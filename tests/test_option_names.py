"""A library error names an option by its parameter name and carries it as data; the command
line writes it as its flag."""

from __future__ import annotations

import pytest
from helpers import cli

from ppaux.skew import SetupError, connect


@pytest.mark.parametrize(
    ("options", "library", "cli"),
    [
        ({"timeout": 0}, "timeout must be positive, not 0", "--timeout must be positive, not 0"),
        (
            {"timeout": 5, "init_method": "file:///x", "rank": 0, "world_size": 1},
            "init_method 'file:///x': expected tcp://HOST:PORT or env://",
            "--init-method 'file:///x': expected tcp://HOST:PORT or env://",
        ),
        (
            {"timeout": 5, "init_method": "tcp://h:0", "rank": 0, "world_size": 1},
            "init_method 'tcp://h:0': port 0 is out of range",
            "--init-method 'tcp://h:0': port 0 is out of range",
        ),
        (
            {"timeout": 5, "init_method": "tcp://h:99999", "rank": 0, "world_size": 1},
            "init_method 'tcp://h:99999': port 99999 is out of range",
            "--init-method 'tcp://h:99999': port 99999 is out of range",
        ),
        (
            {"timeout": 5, "init_method": "tcp://h:x", "rank": 0, "world_size": 1},
            "init_method 'tcp://h:x': the port is not a number",
            "--init-method 'tcp://h:x': the port is not a number",
        ),
        (
            {"timeout": 5, "init_method": "tcp://[::1]", "rank": 0, "world_size": 1},
            "init_method 'tcp://[::1]': expected tcp://HOST:PORT or env://",
            "--init-method 'tcp://[::1]': expected tcp://HOST:PORT or env://",
        ),
    ],
)
def test_connect_names_its_parameters_and_the_cli_its_flags(options, library, cli):
    with pytest.raises(SetupError) as caught:
        connect(**options)
    assert str(caught.value) == library
    flags = {"init_method": "--init-method", "timeout": "--timeout"}
    assert caught.value.spelled(flags) == cli


def test_the_option_names_are_data(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(SetupError) as caught:
        connect(timeout=5)
    assert caught.value.options == ("init_method", "rank", "world_size")
    assert str(caught.value) == (
        "this process's rank unknown: run under torchrun, or pass init_method, rank and world_size"
    )
    assert "--" not in str(caught.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--init-method", "tcp://h:99999"),
            "--init-method 'tcp://h:99999': port 99999 is out of range",
        ),
        (("--timeout", "0"), "--timeout must be positive, not 0"),
    ],
)
def test_the_cli_writes_them_as_its_flags(args, message):
    result = cli("check-skew", "--distributed", "--rank", "0", "--world-size", "1", *args)
    assert (result.exit_code, result.stderr) == (2, f"ppaux: error: {message}\n")
