"""Makes the example packages under ``examples/`` importable (``import text_classification``):
they are not installed, and their modules use absolute imports rooted at ``examples/``.
``no_network`` is for the tests that must run offline; ``usage_error`` runs a script that must
refuse its flags."""

from __future__ import annotations

import os
import socket
import sys

import pytest

_EXAMPLES_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples"
)
if _EXAMPLES_DIR not in sys.path:
    sys.path.insert(0, _EXAMPLES_DIR)


@pytest.fixture
def no_network(monkeypatch):
    """Refuse every non-loopback connection."""
    original = socket.socket.connect

    def guarded(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in (
            "127.0.0.1",
            "::1",
            "localhost",
        ):
            raise AssertionError(f"test tried to reach the network: {address}")
        return original(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def usage_error(capsys):
    """``usage_error(main, argv)``: runs a script's ``main``, which must stop with argparse's
    usage status (exit code 2), and returns what it wrote to stderr."""

    def run(main, argv) -> str:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        return capsys.readouterr().err

    return run
