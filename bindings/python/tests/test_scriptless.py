"""Plain locks on nodes that run no scripts (docs/servers.md): Valkey 9.1
with its Lua engine unloaded (REDIS_NO_SCRIPTING=lua) or a server whose ACL
refuses @scripting (acl, the default on other servers). A lock of one
resource is taken, extended, fenced, kept and released with no script run;
what needs a script raises Unsupported at once, naming scripting."""

import asyncio
import os
import re
import time
from typing import Iterator

import pytest
from conftest import Nodes, on_every_node, start_nodes, stop_nodes

import redlock
import redlock.asyncio as aredlock

NODES = 3
# A kept lock's lease here: renewed every 200 ms.
KEPT_MS = 600
# Generous deadlines: the machine running the tests may be busy.
DEADLINES = {"node_timeout_ms": 2000, "connect_timeout_ms": 2000}


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    """Three nodes without scripting for this module (in place of the
    session's five, which run scripts)."""
    how = os.environ.get("REDIS_NO_SCRIPTING") or (
        "lua" if "valkey" in os.environ.get("REDIS_SERVER", "") else "acl")
    started = start_nodes(tmp_path_factory.mktemp("scriptless"), NODES,
                          REDIS_NO_SCRIPTING=how)
    try:
        yield started
    finally:
        stop_nodes(started)


def make_client(nodes: Nodes, prefix: str, **options: int) -> redlock.Redlock:
    return redlock.Redlock(nodes.uris, key_prefix=prefix, **DEADLINES, **options)


@pytest.fixture
def client(nodes: Nodes, prefix: str) -> Iterator[redlock.Redlock]:
    with make_client(nodes, prefix) as c:
        yield c


@pytest.fixture
def other(nodes: Nodes, prefix: str) -> Iterator[redlock.Redlock]:
    with make_client(nodes, prefix) as c:
        yield c


def scripts_run(nodes: Nodes) -> int:
    """The scripts and functions the nodes ran, from INFO commandstats: calls
    that did not fail (a refusal by the ACL is no call; one for want of the
    Lua engine is a failed call)."""
    ran = 0
    for stats in on_every_node(nodes, "INFO", "commandstats"):
        for calls, failed in re.findall(
                r"cmdstat_(?:eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro):"
                r"calls=(\d+),.*failed_calls=(\d+)", stats):
            ran += int(calls) - int(failed)
    return ran


def released_everywhere(nodes: Nodes, key: str) -> bool:
    """Whether no node holds key (the call returns at a quorum: the last
    node may answer a moment later)."""
    for _ in range(100):
        if on_every_node(nodes, "EXISTS", key) == ["0"] * NODES:
            return True
        time.sleep(0.01)
    return False


def test_a_plain_lock_is_taken_extended_and_released(client, nodes, prefix):
    lock = client.get_lock("plain")
    assert lock.try_lock(lease=5)
    assert lock.is_held() and lock.locked()
    assert on_every_node(nodes, "GET", prefix + "plain").count(lock.token) >= 2
    lock.extend(20)
    assert 5 < lock.validity <= 20
    assert sum(int(ttl) > 5000 for ttl in on_every_node(nodes, "PTTL", prefix + "plain")) >= 2
    lock.unlock()
    assert not lock.is_held()
    assert released_everywhere(nodes, prefix + "plain")
    assert [node["scripting"] for node in client.health()] == ["no"] * NODES
    assert scripts_run(nodes) == 0


def test_fences_increase(nodes, prefix):
    with make_client(nodes, prefix, fencing=1) as first, \
            make_client(nodes, prefix, fencing=1) as second:
        fences = []
        for client in (first, second):
            lock = client.get_lock("fenced")
            assert lock.try_lock(lease=5)
            fences.append(lock.fence)
            lock.unlock()
        assert 1 <= fences[0] < fences[1]


def test_a_kept_lock_outlives_its_lease(nodes, prefix, other):
    with make_client(nodes, prefix, watchdog_lease_ms=KEPT_MS) as keeper:
        lock = keeper.get_lock("kept")
        assert lock.try_lock()
        theirs = other.get_lock("kept")
        end = time.monotonic() + 2.5 * KEPT_MS / 1000
        while time.monotonic() < end:
            assert not theirs.try_lock(lease=5)
            assert lock.is_held() and not lock.lost
            time.sleep(0.1)
        lock.unlock()
        assert released_everywhere(nodes, prefix + "kept")


@pytest.mark.asyncio
async def test_asyncio_takes_keeps_and_releases(nodes, prefix):
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS,
                                **DEADLINES) as client:
        lock = client.get_lock("async")
        assert await lock.try_lock(lease=5)
        await lock.extend(20)
        assert 5 < lock.validity <= 20
        await lock.unlock()
        assert released_everywhere(nodes, prefix + "async")
        assert await lock.try_lock()
        await asyncio.sleep(2 * KEPT_MS / 1000)
        assert lock.validity > 0 and not lock.lost
        await lock.unlock()
        assert released_everywhere(nodes, prefix + "async")


def assert_refused(acquire) -> None:
    started = time.monotonic()
    with pytest.raises(redlock.Unsupported, match="scripting"):
        acquire()
    assert time.monotonic() - started < 1


def test_what_needs_a_script_is_refused(client):
    # A fresh client finds out by the nodes' refusals; then it knows.
    for _ in range(2):
        assert_refused(lambda: client.get_multi_lock("a", "b").try_lock(lease=5))
        assert_refused(lambda: client.get_read_write_lock("rw").read_lock().try_lock(lease=5))
        assert_refused(lambda: client.get_read_write_lock("rw").write_lock().try_lock(lease=5))
        assert_refused(lambda: client.get_semaphore("sem", 2).try_acquire(lease=5))
        # And a plain lock still works.
        lock = client.get_lock("still")
        assert lock.try_lock(lease=5)
        lock.unlock()


def test_no_script_ran(nodes):
    assert scripts_run(nodes) == 0
