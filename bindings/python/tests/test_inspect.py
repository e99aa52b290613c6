"""Asking the nodes about a lock and forcing it open, sync and asyncio:
locked() is "held by anyone" (a quorum of the nodes has it under one token),
is_held() this object's own hold; remain_time_to_live() what a quorum still
has; force_unlock() deletes any holder's key and wakes the waiters."""

import math
import threading
import time

import pytest
from conftest import on_every_node, redis_cli

import redlock
import redlock.asyncio as aredlock


def test_locked_asks_the_nodes_about_any_holder(client, other):
    mine, theirs = client.get_lock("job"), other.get_lock("job")
    assert not theirs.locked() and theirs.remain_time_to_live() is None
    assert mine.try_lock(lease=10)
    assert theirs.locked() and not theirs.is_held()
    assert 8.0 < theirs.remain_time_to_live() <= 10.0
    mine.unlock()
    assert not theirs.locked()


def test_a_foreign_key_on_a_quorum_is_a_lock_and_on_a_minority_is_not(nodes, client, prefix):
    lock = client.get_lock("foreign")
    for uri in nodes.uris[:3]:
        redis_cli(uri, "SET", f"{prefix}foreign", "another-library", "PX", "6000")
    assert lock.locked() and 4.0 < lock.remain_time_to_live() <= 6.0
    redis_cli(nodes.uris[2], "DEL", f"{prefix}foreign")
    assert not lock.locked()
    on_every_node(nodes, "SET", f"{prefix}foreign", "forever")
    assert lock.remain_time_to_live() == math.inf
    on_every_node(nodes, "DEL", f"{prefix}foreign")


def test_a_multi_lock_is_locked_when_any_resource_is(client, other):
    held = other.get_lock("b")  # kept referenced: a collected Lock is released
    assert held.try_lock(lease=5)
    both = client.get_multi_lock("a", "b")
    assert both.locked() and 3.0 < both.remain_time_to_live() <= 5.0
    assert not both.try_lock()
    assert both.force_unlock()
    assert not both.locked()


def test_force_unlock_takes_the_lock_from_its_holder(client, other):
    holder = client.get_lock("stuck")
    assert holder.try_lock(lease=30)
    assert other.get_lock("stuck").force_unlock()
    assert not holder.locked()
    with pytest.raises(redlock.LockNotHeld):
        holder.extend(30)
    assert not other.get_lock("stuck").force_unlock()  # nothing left to delete


def test_force_unlock_wakes_a_waiter(nodes, client, prefix):
    on_every_node(nodes, "SET", f"{prefix}wake", "5ca1ab1e" * 4, "PX", "30000")  # a token
    with redlock.Redlock(nodes.uris, key_prefix=prefix, retry_delay_ms=3000,
                         retry_jitter_ms=0) as waiting:
        got = {}

        def wait() -> None:
            lock = waiting.get_lock("wake")
            got["ok"] = lock.try_lock(wait=10, lease=5)
            got["at"] = time.monotonic()
            lock.unlock()

        thread = threading.Thread(target=wait)
        thread.start()
        time.sleep(0.3)  # its first attempt failed: it waits, subscribed
        forced_at = time.monotonic()
        assert client.get_lock("wake").force_unlock()
        thread.join()
    # A timed retry would have come 3 s after the first attempt.
    assert got["ok"] and got["at"] - forced_at < 1.0


def test_a_key_that_is_not_a_lock_is_refused_and_kept(nodes, client, prefix):
    on_every_node(nodes, "RPUSH", f"{prefix}list", "item")
    lock = client.get_lock("list")
    with pytest.raises(redlock.WrongTypeError):
        lock.locked()
    with pytest.raises(redlock.WrongTypeError):
        lock.force_unlock()
    assert on_every_node(nodes, "TYPE", f"{prefix}list") == ["list"] * 5
    on_every_node(nodes, "DEL", f"{prefix}list")


def test_too_few_nodes_cannot_tell(missing_sockets):
    with redlock.Redlock(missing_sockets) as nowhere:
        with pytest.raises(redlock.NoQuorum):
            nowhere.get_lock("x").locked()
        with pytest.raises(redlock.NoQuorum):
            nowhere.get_lock("x").force_unlock()


def test_rlock_asks_the_nodes_too(client, other):
    rlock = client.get_rlock("re")
    with rlock:
        assert other.get_rlock("re").locked()
        assert other.get_rlock("re").remain_time_to_live() > 0
    assert not rlock.locked()


@pytest.mark.asyncio
async def test_asyncio_asks_and_forces_on_the_loop(nodes, prefix, client, missing_sockets):
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix) as aclient:
        lock = aclient.get_lock("job")
        assert not await lock.locked() and await lock.remain_time_to_live() is None
        held = client.get_lock("job")
        assert held.try_lock(lease=10)
        assert await lock.locked() and not lock.is_held()
        assert 8.0 < await lock.remain_time_to_live() <= 10.0
        assert await lock.force_unlock()
        assert not await lock.locked()
        assert await lock.try_lock(lease=5)
        await lock.unlock()

    async with aredlock.Redlock(missing_sockets) as nowhere:
        with pytest.raises(redlock.NoQuorum):
            await nowhere.get_lock("x").locked()
