"""A Sentinel group as one Redlock node (redis-sentinel:// URIs): the lock
goes to the master its sentinels name, follows a failover, and a master
that may have lost keys (a replica promoted, even before it had a copy)
holds no new lock for max_lease_ms, for every client, including one that
first meets it after the failover."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

import pytest

import redlock
from harness import Nodes, SentinelGroup, Toxiproxy, wait_until

MAX_LEASE_MS = 3000


@pytest.fixture
def group(tmp_path: Path) -> Iterator[SentinelGroup]:
    started = SentinelGroup(tmp_path / "sentinel")
    try:
        yield started
    finally:
        started.stop()


def client_of(group: SentinelGroup) -> redlock.Redlock:
    return redlock.Redlock([group.uri], max_lease_ms=MAX_LEASE_MS, watchdog_lease_ms=MAX_LEASE_MS,
                           node_timeout_ms=500, connect_timeout_ms=500, retry_delay_ms=50)


def test_the_lock_is_on_the_master_the_sentinels_name(group: SentinelGroup) -> None:
    with client_of(group) as client:
        lock = client.get_lock("sentinel-basic")
        assert lock.try_lock(lease=2.0)
        master = group.master()
        assert group.cli(master, "GET", "sentinel-basic") == lock.token
        (node,) = client.health()
        assert node["kind"] == "sentinel"
        assert node["server"] == f"127.0.0.1:{master}"
        assert node["node"] == f"{group.name}@127.0.0.1:{group.sentinels[0]}"
        lock.unlock()
        assert group.cli(master, "EXISTS", "sentinel-basic") == "0"


def test_a_down_sentinel_does_not_matter(group: SentinelGroup) -> None:
    group.kill(group.sentinels[0])
    with client_of(group) as client:
        lock = client.get_lock("sentinel-one-down")
        assert lock.try_lock(lease=2.0)
        lock.unlock()


def test_after_a_failover_new_locks_wait_and_the_holder_follows(group: SentinelGroup) -> None:
    with client_of(group) as holder:
        lock = holder.get_lock("sentinel-held")
        assert lock.try_lock()   # kept: renewed every second
        old = group.master()
        assert group.cli(old, "WAIT", "1", "1000") == "1"   # the replica has the key
        new = group.failover(settle=False)
        # A client that meets the new master first (it never saw the old
        # one): a new lock waits until max_lease_ms after the promotion was
        # first seen, by anyone.
        with client_of(group) as fresh:
            other_lock = fresh.get_lock("sentinel-new")
            with pytest.raises(redlock.NoQuorum, match="may have lost keys"):
                other_lock.try_lock(lease=1.0)
            (node,) = fresh.health()
            assert node["state"] == "guarded" and int(node["guard_ms"]) > 0
            assert node["server"] == f"127.0.0.1:{new}"
            assert other_lock.try_lock(wait=MAX_LEASE_MS / 1000 + 2, lease=1.0)
            other_lock.unlock()
        # The holder's key was copied to the new master: its renewals find
        # it there (a sentinel asked every second says where), and the lock
        # holds, through the old master's turn to replica.
        group.settle()
        assert group.role(old) == "slave"
        ttl = int(group.cli(new, "PTTL", "sentinel-held"))
        wait_until(lambda: int(group.cli(new, "PTTL", "sentinel-held")) > ttl, 5,
                   "a renewal on the new master")
        assert not lock.lost
        assert group.cli(new, "GET", "sentinel-held") == lock.token
        lock.unlock()
        assert group.cli(new, "EXISTS", "sentinel-held") == "0"


def test_a_late_client_is_not_fooled_by_a_promoted_replica_without_the_key(
        group: SentinelGroup) -> None:
    old = group.master()
    replica = next(port for port in group.servers if port != old)
    # The replica misses what comes next (replication is asynchronous): it
    # is stopped, and the master drops its link to it...
    os.kill(group.pid(replica), signal.SIGSTOP)
    group.cli(old, "CLIENT", "KILL", "TYPE", "replica")
    try:
        with client_of(group) as holder:
            lock = holder.get_lock("sentinel-lost")
            assert lock.try_lock(lease=MAX_LEASE_MS / 1000)
            taken = time.monotonic()
            # ... and the master dies before it could have it.
            group.kill(old)
            os.kill(group.pid(replica), signal.SIGCONT)
            wait_until(lambda: group.master() == replica and group.role(replica) == "master",
                       60, "the replica to be promoted")
            assert group.cli(replica, "EXISTS", "sentinel-lost") == "0"
            # A client that never saw the old master: while the holder's
            # lease may run, the lock is not its to take.
            with client_of(group) as late:
                late_lock = late.get_lock("sentinel-lost")
                while time.monotonic() - taken < MAX_LEASE_MS / 1000:
                    with pytest.raises(redlock.NoQuorum, match="may have lost keys"):
                        late_lock.try_lock(lease=1.0)
                    time.sleep(0.2)
                # The holder learns that it lost the lock, never silently.
                with pytest.raises(redlock.LockError):
                    lock.extend(1.0)
                assert lock.lost
                assert late_lock.try_lock(wait=MAX_LEASE_MS / 1000 + 2, lease=1.0)
                late_lock.unlock()
    finally:
        os.kill(group.pid(replica), signal.SIGCONT)


@pytest.mark.parametrize("uri, words", [
    ("redis-sentinel://127.0.0.1:26379", "no master name"),
    ("redis-sentinel://127.0.0.1:26379,127.0.0.1:99999?sentinelMasterId=m", "port"),
    ("redis-sentinel://127.0.0.1?sentinelMasterId=m#m", "named twice"),
    ("redis-sentinel://127.0.0.1?timeout=5", "only parameter"),
    ("redis-cluster-ish://127.0.0.1", "unknown URI scheme"),
])
def test_bad_sentinel_uris_are_refused_with_a_reason(uri: str, words: str) -> None:
    with pytest.raises(redlock.InvalidArgument, match=words):
        redlock.Redlock([uri])


def test_a_lease_longer_than_max_lease_ms_is_refused(group: SentinelGroup) -> None:
    with client_of(group) as client:
        with pytest.raises(redlock.InvalidArgument, match="max_lease_ms"):
            client.get_lock("too-long").try_lock(lease=MAX_LEASE_MS / 1000 + 1)


def test_sentinels_that_require_auth_take_sentinel_password(group: SentinelGroup) -> None:
    master = group.master()
    for port in group.sentinels:
        assert group.cli(port, "ACL", "SETUSER", "default", "on", ">sentinel-secret") == "OK"
    with redlock.Redlock([group.uri], max_lease_ms=MAX_LEASE_MS, node_timeout_ms=500,
                         connect_timeout_ms=500) as refused:
        with pytest.raises(redlock.LockError, match="sentinel_password"):
            refused.get_lock("sentinel-auth").try_lock(lease=1.0)
    with redlock.Redlock([group.uri], max_lease_ms=MAX_LEASE_MS, node_timeout_ms=500,
                         connect_timeout_ms=500, sentinel_password="wrong") as wrong:
        with pytest.raises(redlock.LockError, match="sentinel_password"):
            wrong.get_lock("sentinel-auth").try_lock(lease=1.0)
    with redlock.Redlock([group.uri], max_lease_ms=MAX_LEASE_MS, node_timeout_ms=500,
                         connect_timeout_ms=500, sentinel_password="sentinel-secret") as client:
        lock = client.get_lock("sentinel-auth")
        assert lock.try_lock(lease=1.0)
        assert group.cli(master, "GET", "sentinel-auth") == lock.token
        lock.unlock()


class _Events(logging.Handler):
    """The library's events (the logger "redlock"), each with when it came."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen: List[Tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((time.monotonic(), record.getMessage()))

    def first(self, word: str) -> Optional[float]:
        return next((at for at, message in list(self.seen) if word in message), None)


def test_a_client_follows_a_failover_within_a_poll_while_other_nodes_answer_first(
        group: SentinelGroup, nodes: Nodes, toxiproxy: Toxiproxy) -> None:
    """The promoted master's guard (max_lease_ms + sentinel_poll_ms) counts on
    every client asking the sentinels within sentinel_poll_ms. Here the two
    other nodes always answer before a sentinel can (30 ms away), and the
    old master, stopped, wakes up still a master 2 s after the promotion:
    the client must have followed by then, from its polls alone."""
    sentinels = [toxiproxy.proxy(f"sentinel-{port}", port) for port in group.sentinels]
    for port in group.sentinels:
        toxiproxy.toxic(f"sentinel-{port}", "latency", latency=30)
    uri = ("redis-sentinel://" + ",".join(f"127.0.0.1:{p}" for p in sentinels)
           + f"?sentinelMasterId={group.name}")
    events = _Events()
    logger = logging.getLogger("redlock")
    logger.addHandler(events)
    level = logger.level
    logger.setLevel(logging.INFO)
    stop = threading.Event()
    client = redlock.Redlock([nodes.uris[0], nodes.uris[1], uri], max_lease_ms=1000,
                             node_timeout_ms=300, connect_timeout_ms=300)

    def contend() -> None:
        while not stop.is_set():
            try:
                with client.lock("follow", lease=1.0, wait=0):
                    pass
            except redlock.LockError:
                pass
            time.sleep(0.005)

    contender = threading.Thread(target=contend)
    contender.start()
    old = group.master()
    try:
        time.sleep(1.5)   # polls come and go while every node answers
        os.kill(group.pid(old), signal.SIGSTOP)
        try:
            wait_until(lambda: group.master() != old, 30, "the sentinels to promote the replica")
            promoted = time.monotonic()
            time.sleep(2.0)
        finally:
            os.kill(group.pid(old), signal.SIGCONT)
        wait_until(lambda: events.first("node_failover") is not None, 30,
                   "the client to follow the failover")
    finally:
        stop.set()
        contender.join()
        client.close()
        logger.removeHandler(events)
        logger.setLevel(level)
    followed = events.first("node_failover")
    # sentinel_poll_ms (1000) and an ask, with room for a loaded machine; the
    # old master, stopped for 2 s more, is demoted later still.
    assert followed - promoted < 1.8, events.seen


def test_a_master_no_sentinel_confirmed_lately_holds_no_new_lock(
        group: SentinelGroup, toxiproxy: Toxiproxy) -> None:
    """Cut off from its sentinels, a client cannot know whether its master
    was replaced: after sentinel_poll_ms its vote no longer counts for a new
    lock (the guard of a promoted master counts on that), while the lock it
    holds is still extended and released there; once a sentinel answers
    again, new locks are granted again."""
    names = [f"sentinel-{port}" for port in group.sentinels]
    ports = [toxiproxy.proxy(name, port) for name, port in zip(names, group.sentinels)]
    uri = ("redis-sentinel://" + ",".join(f"127.0.0.1:{p}" for p in ports)
           + f"?sentinelMasterId={group.name}")
    with redlock.Redlock([uri], max_lease_ms=3000, sentinel_poll_ms=500, node_timeout_ms=300,
                         connect_timeout_ms=300, retry_delay_ms=50) as client:
        held = client.get_lock("confirmed-held")
        assert held.try_lock(lease=3.0)
        for name in names:
            toxiproxy.set_enabled(name, False)
        time.sleep(0.7)
        other = client.get_lock("confirmed-new")
        with pytest.raises(redlock.NoQuorum, match="no sentinel has named its master"):
            other.try_lock(lease=1.0, wait=0)
        held.extend(3.0)
        assert group.cli(group.master(), "GET", "confirmed-held") == held.token
        held.unlock()
        for name in names:
            toxiproxy.set_enabled(name, True)
        assert other.try_lock(lease=1.0, wait=2.0)
        other.unlock()
