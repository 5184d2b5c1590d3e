"""The core's sandbox contract, against the docker backend on a real engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from clawcore.testing.contracts import SandboxBackendContract
from clawcore.types import SandboxBackend


@pytest.mark.docker
class TestDockerBackendContract(SandboxBackendContract):
    @pytest.fixture
    def backend(self, make_docker: Callable[..., Any]) -> SandboxBackend:
        backend: SandboxBackend = make_docker()
        return backend
