"""Who owns a sandbox container: the liveness check the start-up sweep relies on (no engine needed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from clawcore_sandbox_docker.leftovers import LABEL, OWNER_LABEL, SESSION_LABEL, Owner, container_labels


def test_labels_name_this_process_and_session() -> None:
    labels = container_labels("s-42")
    assert labels[LABEL] == "1"
    assert labels[SESSION_LABEL] == "s-42"
    owner = Owner.parse(labels[OWNER_LABEL])
    assert owner is not None and owner.pid == os.getpid()
    assert owner == Owner.current()
    assert container_labels("")[SESSION_LABEL] == "-"


def test_this_process_is_alive_and_a_finished_one_is_not() -> None:
    assert Owner.current().is_alive()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(30)
    assert not Owner(Owner.current().host, child.pid, "").is_alive()


def test_a_reused_pid_is_not_the_owner() -> None:
    me = Owner.current()
    if not me.start:
        pytest.skip("no /proc here: only the pid can be checked")
    impostor = Owner(me.host, me.pid, str(int(me.start) + 1))
    assert not impostor.is_alive()


def test_malformed_owner_labels_are_ignored() -> None:
    assert Owner.parse("") is None
    assert Owner.parse("host/not-a-pid/1") is None
    assert Owner.parse("a/b") is None
    assert Owner.parse("my/host/12/345") == Owner("my/host", 12, "345")
