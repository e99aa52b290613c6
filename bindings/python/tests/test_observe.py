"""What a client tells about itself: the library's events in the "redlock"
logger (sync client and redlock.asyncio), health() and ping()."""

import asyncio
import logging
import re
import subprocess
import time
from pathlib import Path
from typing import Iterator, List

import pytest
from conftest import NODES_SCRIPT, Nodes, redis_cli

import redlock
import redlock.asyncio as aredlock
from redlock import client as client_module

TOKEN = re.compile(r"[0-9a-f]{32}")
KEPT_MS = 900


@pytest.fixture
def debug_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The "redlock" logger at DEBUG, before the test makes its clients: a
    client sends the events of the level its logger has when it is made."""
    caplog.set_level(logging.DEBUG, logger="redlock")
    return caplog


def records(caplog: pytest.LogCaptureFixture, event: str) -> List[logging.LogRecord]:
    return [r for r in caplog.records
            if r.name == "redlock" and getattr(r, "redlock_event", None) == event]


def only(caplog: pytest.LogCaptureFixture, event: str, level: int) -> str:
    """The message of the one record of event, at level."""
    found = records(caplog, event)
    assert len(found) == 1, [r.getMessage() for r in caplog.records]
    assert found[0].levelno == level
    return found[0].getMessage()


def assert_no_token(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        assert not TOKEN.search(record.getMessage()), record.getMessage()


class OwnNodes:
    """Three nodes of a test's own, to stop and start again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        subprocess.run([str(NODES_SCRIPT), "start", str(path), "3"], check=True,
                       stdout=subprocess.DEVNULL)
        self.uris = (path / "uris").read_text().split()

    def stop(self, i: int) -> None:
        subprocess.run([str(NODES_SCRIPT), "stop-node", str(self.path), str(i + 1)], check=True,
                       stdout=subprocess.DEVNULL)

    def start(self, i: int) -> None:
        subprocess.run([str(NODES_SCRIPT), "start-node", str(self.path), str(i + 1)], check=True,
                       stdout=subprocess.DEVNULL)

    def label(self, i: int) -> str:
        return self.uris[i][len("redis://"):]


@pytest.fixture
def own_nodes(tmp_path: Path) -> Iterator[OwnNodes]:
    nodes = OwnNodes(tmp_path / "nodes")
    try:
        yield nodes
    finally:
        subprocess.run([str(NODES_SCRIPT), "stop", str(nodes.path)], check=True)


def test_a_lock_cycle_is_logged_at_debug(debug_log, nodes: Nodes, prefix: str) -> None:
    with redlock.Redlock(nodes.uris, key_prefix=prefix) as client, \
            redlock.Redlock(nodes.uris, key_prefix=prefix) as other:
        lock = client.get_lock("job")
        assert lock.try_lock(lease=10.0)
        owner = f"owner={lock.token[:8]}"
        assert not other.get_lock("job").try_lock(lease=10.0)
        lock.extend(10.0)
        lock.unlock()
    acquired = only(debug_log, "acquired", logging.DEBUG)
    assert acquired.startswith("acquired op=lock resource=job " + owner + " nodes=")
    assert " validity_ms=" in acquired
    assert "op=lock resource=job nodes=0/5" in only(debug_log, "refused", logging.DEBUG)
    assert owner in only(debug_log, "extended", logging.DEBUG)
    assert owner in only(debug_log, "released", logging.DEBUG)
    assert_no_token(debug_log)


def test_nothing_crosses_into_python_below_the_loggers_level(caplog, nodes: Nodes, prefix: str,
                                                              monkeypatch) -> None:
    caplog.set_level(logging.WARNING, logger="redlock")
    calls: List[str] = []
    monkeypatch.setattr(client_module, "_log", lambda level, event, message: calls.append(event))
    with redlock.Redlock(nodes.uris, key_prefix=prefix) as client:
        with client.lock("job", lease=10.0):
            pass
        assert not client.get_lock("job").force_unlock()
    assert calls == []


def test_a_stopped_node_is_down_then_back(debug_log, own_nodes: OwnNodes) -> None:
    with redlock.Redlock(own_nodes.uris) as client:
        assert [n["state"] for n in client.health()] == ["unknown"] * 3
        assert client.ping() == 3
        health = client.health()
        assert [n["node"] for n in health] == [own_nodes.label(i) for i in range(3)]
        assert all(n["state"] == "up" and n["rtt_ms"] is not None and len(n["run_id"]) == 40
                   and n["last_error"] is None and n["failures"] == 0 for n in health)
        own_nodes.stop(0)
        with client.lock("job", lease=10.0):
            pass
        down = client.health()[0]   # at once, as that call returned
        assert down["state"] == "down" and "connect" in down["last_error"]
        assert down["failures"] >= 1 and down["commands"] >= 1
        assert only(debug_log, "node_down", logging.WARNING).startswith(
            f"node_down node={own_nodes.label(0)} was=up retry_in_ms=")
        own_nodes.start(0)
        time.sleep(1.1)   # the longest pause between connects to a node that failed
        assert client.ping() == 2   # back, but under the restart guard
        assert client.health()[0]["state"] == "guarded"
        assert client.health()[0]["guard_ms"] > 0
        assert f"node={own_nodes.label(0)} was=down" in only(debug_log, "node_back", logging.INFO)
        only(debug_log, "node_restarted", logging.WARNING)


def test_ping_needs_a_quorum(debug_log, own_nodes: OwnNodes) -> None:
    with redlock.Redlock(own_nodes.uris) as client:
        own_nodes.stop(0)
        assert client.ping() == 2
        own_nodes.stop(1)
        with pytest.raises(redlock.NoQuorum, match="ping: 1 of 3 nodes agreed, 2 needed"):
            client.ping()
        assert [n["state"] for n in client.health()] == ["down", "down", "up"]
        assert len(records(debug_log, "node_down")) == 2


def test_failed_renewals_and_the_loss_are_logged(debug_log, nodes: Nodes, prefix: str) -> None:
    with redlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS,
                         node_timeout_ms=100, retry_delay_ms=50) as client:
        lock = client.get_lock("job")
        lost = []
        lock.on_lost(lambda lock, error: lost.append(error))
        assert lock.try_lock()
        owner = f"owner={lock.token[:8]}"
        try:
            for uri in nodes.uris[:3]:
                redis_cli(uri, "CLIENT", "PAUSE", "3000", "ALL")
            end = time.monotonic() + 3
            while not lost and time.monotonic() < end:
                time.sleep(0.01)
        finally:
            for uri in nodes.uris[:3]:
                redis_cli(uri, "CLIENT", "UNPAUSE")
        assert lost
        failed = records(debug_log, "renewal_failed")
        assert failed and all(r.levelno == logging.WARNING for r in failed)
        assert f"resource=job {owner} code=noquorum retry_in_ms=50 " in failed[0].getMessage()
        assert f"resource=job {owner} code=" in only(debug_log, "lost", logging.ERROR)
    assert_no_token(debug_log)


@pytest.mark.asyncio
async def test_asyncio_logs_the_same_events(debug_log, nodes: Nodes, prefix: str) -> None:
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS,
                                node_timeout_ms=100, retry_delay_ms=50) as client:
        lock = client.get_lock("job")
        assert await lock.try_lock(lease=10.0)
        await lock.unlock()
        assert len(client.health()) == 5
        assert await client.ping() == 5
        assert await lock.try_lock()
        owner = f"owner={lock.token[:8]}"
        try:
            for uri in nodes.uris[:3]:
                redis_cli(uri, "CLIENT", "PAUSE", "3000", "ALL")
            assert await asyncio.wait_for(lock.wait_lost(), 5) is not None
        finally:
            for uri in nodes.uris[:3]:
                redis_cli(uri, "CLIENT", "UNPAUSE")
    assert len(records(debug_log, "acquired")) == 2
    assert len(records(debug_log, "released")) == 1
    failed = records(debug_log, "renewal_failed")
    assert failed and f"resource=job {owner} code=noquorum retry_in_ms=50 " in \
        failed[0].getMessage()
    assert f"resource=job {owner} code=" in only(debug_log, "lost", logging.ERROR)
    assert_no_token(debug_log)
