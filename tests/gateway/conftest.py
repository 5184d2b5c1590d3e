"""A real gateway on loopback, on an ephemeral port, serving a fresh runtime."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

import pytest
from clawcore.gateway import GatewayServer, GatewaySettings

TOKEN = "t0k3n-for-tests-9f2c41d7e8a6b5"


@pytest.fixture
def start_gateway(runtime: Any) -> Iterator[Callable[..., GatewayServer]]:
    """``start_gateway(**settings)`` -> a running server; stopped after the test."""
    with ExitStack() as stack:

        def start(**overrides: Any) -> GatewayServer:
            settings = replace(GatewaySettings(host="127.0.0.1", port=0, handshake_timeout=5.0), **overrides)
            return stack.enter_context(GatewayServer(runtime, settings).running())

        yield start
