"""A Redis Cluster as one Redlock node (redis-cluster:// URIs): each lock goes
to the master of its key's slot, follows slots that move (MOVED) or are
moving (ASK) while locks are held and taken, and a promoted replica holds no
new lock for max_lease_ms, for every client."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Iterator, List

import pytest

import redlock
from harness import Cluster, wait_until

MAX_LEASE_MS = 3000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    started = Cluster(tmp_path / "cluster")
    try:
        yield started
    finally:
        started.stop()


def client_of(cluster: Cluster, **options: object) -> redlock.Redlock:
    settings = dict(max_lease_ms=MAX_LEASE_MS, watchdog_lease_ms=MAX_LEASE_MS,
                    node_timeout_ms=500, connect_timeout_ms=500, retry_delay_ms=50)
    return redlock.Redlock([cluster.uri], **{**settings, **options})


def names_on_every_master(cluster: Cluster, prefix: str) -> List[str]:
    """Names whose keys are served by each of the three masters, one each."""
    by_owner = {}
    for i in range(100):
        by_owner.setdefault(cluster.owner(f"{prefix}{i}"), f"{prefix}{i}")
        if len(by_owner) == 3:
            return list(by_owner.values())
    raise AssertionError("100 names all hash to fewer than three masters")


def test_each_lock_is_on_the_master_of_its_slot(cluster: Cluster) -> None:
    with client_of(cluster) as client:
        names = names_on_every_master(cluster, "cluster-basic-")
        locks = [client.get_lock(name) for name in names]
        for lock in locks:
            assert lock.try_lock(lease=2.0)
        for name, lock in zip(names, locks):
            assert cluster.cli(cluster.owner(name), "GET", name) == lock.token
        (node,) = client.health()
        assert node["kind"] == "cluster"
        assert node["node"] == f"cluster@127.0.0.1:{cluster.ports[0]}"
        assert sorted(node["server"].split("+")) == sorted(
            f"127.0.0.1:{cluster.owner(name)}" for name in names)
        for name, lock in zip(names, locks):
            lock.unlock()
            assert cluster.cli(cluster.owner(name), "EXISTS", name) == "0"


def test_a_multi_lock_across_masters_is_all_or_nothing(cluster: Cluster) -> None:
    """Names on every master: the node takes each slot's part on its master
    in turn, and holds all of them or, when one part is held elsewhere,
    none (the parts it took are released)."""
    with client_of(cluster) as client, client_of(cluster) as other:
        names = names_on_every_master(cluster, "cluster-multi-")
        multi = client.get_multi_lock(*names)
        assert multi.try_lock(lease=2.0)
        for name in names:
            assert cluster.cli(cluster.owner(name), "GET", name) == multi.token
        assert not other.get_lock(names[1]).try_lock(lease=1.0)
        assert not other.get_multi_lock(names[2], "cluster-multi-free").try_lock(lease=1.0)
        multi.unlock()
        for name in names:
            assert cluster.cli(cluster.owner(name), "EXISTS", name) == "0"

        # One part held by another: refused, and no part is left behind:
        # the parts taken before it are released as soon as the refusal is
        # known, long before a node deadline (5 s for this client) or their
        # lease (10 s) could end them.
        with client_of(cluster, node_timeout_ms=5000, max_lease_ms=10000) as patient:
            for held in names:
                blocker = other.get_lock(held)
                assert blocker.try_lock(lease=2.5)
                assert not patient.get_multi_lock(*names).try_lock(lease=10.0)
                for name in names:
                    if name != held:
                        wait_until(lambda: cluster.cli(cluster.owner(name), "EXISTS", name) == "0",
                                   2.0, f"the part of {name} released")
                assert cluster.cli(cluster.owner(held), "GET", held) == blocker.token
                blocker.unlock()

        # Kept (no lease): renewed part by part for longer than its lease.
        kept = client.get_multi_lock(*names)
        assert kept.try_lock()
        time.sleep(2 * MAX_LEASE_MS / 1000)
        assert not kept.lost
        for name in names:
            assert cluster.cli(cluster.owner(name), "GET", name) == kept.token
        kept.unlock()

        # A tagged multi-lock is one part, on one master.
        tagged = client.get_multi_lock("{order:7}:items", "{order:7}:payment")
        assert tagged.try_lock(lease=2.0)
        owner = cluster.owner("{order:7}")
        assert cluster.cli(owner, "GET", "{order:7}:items") == tagged.token
        assert cluster.cli(owner, "GET", "{order:7}:payment") == tagged.token
        tagged.unlock()
    with client_of(cluster, fencing=1) as fenced:
        with pytest.raises(redlock.InvalidArgument, match="hash tag"):
            fenced.get_multi_lock("cluster-a", "cluster-b").try_lock(lease=1.0)


def test_fences_grow_with_or_without_a_hash_tag(cluster: Cluster) -> None:
    """The counter lives in the lock's slot: beside a tagged key, or named
    with the key as its tag."""
    with client_of(cluster, fencing=1) as client, client_of(cluster, fencing=1) as other:
        for name in ("cluster-fenced", "{cluster}-fenced"):
            lock = client.get_lock(name)
            assert lock.try_lock(lease=1.0)
            first = lock.fence
            lock.unlock()
            lock = other.get_lock(name)
            assert lock.try_lock(lease=1.0)
            second = lock.fence
            assert second > first
            lock.unlock()
            counter = (f"'{{{name}}}'" if "{" not in name else f"'{name}'") \
                + " .. string.char(0) .. 'fence'"
            assert cluster.cli(cluster.owner(name), "EVAL",
                               f"return redis.call('get', {counter})", "0") == str(second)
        with pytest.raises(redlock.InvalidArgument, match="hash tag"):
            client.get_lock("odd}name").try_lock(lease=1.0)


def test_a_release_wakes_a_waiter_whichever_master_serves_the_lock(cluster: Cluster) -> None:
    """The waiter's subscription is on one master; a Cluster forwards every
    publish to all its servers. The waiter's own retry comes only after its
    wait has ended (retry_delay_ms 10 s, wait 4 s): only a wake-up gets it
    the lock."""
    with client_of(cluster) as holder, \
            client_of(cluster, retry_delay_ms=10000, retry_jitter_ms=0) as waiter:
        for name in names_on_every_master(cluster, "cluster-wake-"):
            held = holder.get_lock(name)
            assert held.try_lock(lease=MAX_LEASE_MS / 1000)
            wanted = waiter.get_lock(name)
            got: List[bool] = []
            thread = threading.Thread(target=lambda: got.append(wanted.try_lock(wait=4.0,
                                                                                lease=1.0)))
            thread.start()
            time.sleep(0.3)
            assert not got
            held.unlock()
            thread.join()
            assert got == [True], name
            wanted.unlock()


def test_a_kept_lock_follows_its_slot_to_another_master(cluster: Cluster) -> None:
    with client_of(cluster) as holder, client_of(cluster) as other:
        lock = holder.get_lock("cluster-moved")
        assert lock.try_lock()   # kept: renewed every second
        source = cluster.owner("cluster-moved")
        target = next(port for port in cluster.ports[:3] if port != source)
        cluster.migrate("cluster-moved", target)
        assert cluster.owner("cluster-moved") == target
        assert cluster.cli(target, "GET", "cluster-moved") == lock.token
        # Held on its new master: nobody else gets it, and its renewals
        # (MOVED, then the new master) keep it past several leases.
        assert not other.get_lock("cluster-moved").try_lock(lease=1.0)
        time.sleep(2 * MAX_LEASE_MS / 1000)
        assert not lock.lost
        assert cluster.cli(target, "GET", "cluster-moved") == lock.token
        lock.unlock()
        assert cluster.cli(target, "EXISTS", "cluster-moved") == "0"


def test_a_lock_taken_while_its_slot_migrates(cluster: Cluster) -> None:
    """A slot half-way through a migration: a key that is not on the source
    any more (or never was) is taken on the target, through -ASK."""
    with client_of(cluster) as client:
        source = cluster.owner("cluster-asked")
        target = next(port for port in cluster.ports[:3] if port != source)
        slot = cluster.migrate("cluster-asked", target, finish=False)
        lock = client.get_lock("cluster-asked")
        assert lock.try_lock(lease=2.0)
        # The source took no key of the slot: once the target owns the
        # slot, the lock is there.
        cluster.finish(slot, source, target)
        assert cluster.cli(target, "GET", "cluster-asked") == lock.token
        assert not client.get_lock("cluster-asked").try_lock(lease=1.0)
        lock.unlock()
        assert cluster.cli(target, "EXISTS", "cluster-asked") == "0"


def test_after_a_failover_new_locks_wait_and_the_holder_keeps_its_lock(cluster: Cluster) -> None:
    with client_of(cluster) as holder:
        lock = holder.get_lock("cluster-held")
        assert lock.try_lock()   # kept
        old = cluster.owner("cluster-held")
        assert cluster.cli(old, "WAIT", "1", "1000") == "1"   # the replica has the key
        replica = cluster.replica_of(old)
        cluster.failover(replica)
        assert cluster.owner("cluster-held") == replica
        # A client that never saw the old master: the promoted replica says
        # it may have lost keys, for max_lease_ms, and that holds back the
        # whole node, a lock on another master's slot too (the client reads
        # every master's guard before its first new lock counts).
        with client_of(cluster) as fresh:
            other = fresh.get_lock(next(f"cluster-other-{i}" for i in range(1000)
                                        if cluster.owner(f"cluster-other-{i}") == replica))
            elsewhere = fresh.get_lock(next(f"cluster-else-{i}" for i in range(1000)
                                            if cluster.owner(f"cluster-else-{i}") != replica))
            with pytest.raises(redlock.NoQuorum, match="may have lost keys"):
                elsewhere.try_lock(lease=1.0)
            with pytest.raises(redlock.NoQuorum, match="may have lost keys"):
                other.try_lock(lease=1.0)
            (node,) = fresh.health()
            assert node["state"] == "guarded" and int(node["guard_ms"]) > 0
            assert other.try_lock(wait=MAX_LEASE_MS / 1000 + 2, lease=1.0)
            other.unlock()
            assert elsewhere.try_lock(lease=1.0)
            elsewhere.unlock()
        # The holder's key was copied: renewals find it on the new master.
        time.sleep(2 * MAX_LEASE_MS / 1000)
        assert not lock.lost
        assert cluster.cli(replica, "GET", "cluster-held") == lock.token
        lock.unlock()


def test_asyncio_locks_on_every_master_kept_and_woken(cluster: Cluster) -> None:
    """The asyncio driver: its own connections to each master, renewals
    batched by slot, and a waiter woken by a release."""
    import asyncio

    import redlock.asyncio as aredlock

    names = names_on_every_master(cluster, "cluster-aio-") + [f"cluster-aio-x{i}"
                                                             for i in range(20)]

    async def run() -> None:
        options = dict(max_lease_ms=MAX_LEASE_MS, watchdog_lease_ms=MAX_LEASE_MS,
                       node_timeout_ms=500, retry_delay_ms=50)
        async with aredlock.Redlock([cluster.uri], **options) as one, \
                aredlock.Redlock([cluster.uri], **options) as two:
            locks = [one.get_lock(name) for name in names]
            for lock in locks:
                assert await lock.try_lock()   # kept
            across = names_on_every_master(cluster, "cluster-aio-m")
            multi = one.get_multi_lock(*across)
            assert await multi.try_lock()   # kept, a part on each master
            assert not await two.get_lock(across[1]).try_lock()
            await asyncio.sleep(2 * MAX_LEASE_MS / 1000)
            assert not any(lock.lost for lock in locks)
            assert not multi.lost
            for name in across:
                assert cluster.cli(cluster.owner(name), "GET", name) == multi.token
            await multi.unlock()
            for name in across:
                assert cluster.cli(cluster.owner(name), "EXISTS", name) == "0"
            for name, lock in zip(names, locks):
                assert cluster.cli(cluster.owner(name), "GET", name) == lock.token
            waiting = asyncio.ensure_future(two.get_lock(names[0]).try_lock(wait=5.0, lease=1.0))
            await asyncio.sleep(0.2)
            assert not waiting.done()
            await locks[0].unlock()
            assert await waiting
            for lock in locks[1:]:
                await lock.unlock()

    asyncio.run(run())


def test_a_killed_master_s_replica_takes_over_and_the_holder_follows(cluster: Cluster) -> None:
    """kill -9 of the master of a kept lock's slot: its connections fail,
    the node reads the slot map again (from the other seeds) until the
    Cluster has promoted the replica, and the renewals go on there."""
    lease_ms = 12000   # outlives the Cluster's failover (node timeout 2 s)
    with redlock.Redlock([cluster.uri], max_lease_ms=lease_ms, watchdog_lease_ms=lease_ms,
                         node_timeout_ms=500, connect_timeout_ms=500,
                         retry_delay_ms=50) as holder:
        lock = holder.get_lock("cluster-killed")
        assert lock.try_lock()   # kept
        old = cluster.owner("cluster-killed")
        assert cluster.cli(old, "WAIT", "1", "1000") == "1"
        replica = cluster.replica_of(old)
        cluster.kill(old)
        wait_until(lambda: cluster.cli(replica, "ROLE").split()[0] == "master", 30,
                   "the replica to be promoted")
        # Past a renewal on the new master (one every lease / 3).
        wait_until(lambda: cluster.cli(replica, "PTTL", "cluster-killed") not in ("-2", "-1")
                   and int(cluster.cli(replica, "PTTL", "cluster-killed")) > lease_ms * 3 // 4,
                   lease_ms / 1000, "a renewal on the promoted replica")
        assert not lock.lost
        assert cluster.cli(replica, "GET", "cluster-killed") == lock.token
        lock.unlock()
        assert cluster.cli(replica, "EXISTS", "cluster-killed") == "0"
