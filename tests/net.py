"""Loopback ports for tests: one that is free, and a base URL where nothing listens."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port_url() -> str:
    """A model-server base URL where the connection is refused: the server is down."""
    return f"http://127.0.0.1:{free_port()}/v1"
