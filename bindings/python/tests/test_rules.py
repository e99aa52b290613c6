"""The rules every language follows (docs/locks.md), in the sync client and
the asyncio one: reentry keeps the first terms; lost whenever the keys can
have expired; lock() waits until acquired and try_lock() once; a multi-lock
is locked when any of its resources is, for the longest."""

import asyncio
import math
import time

import pytest

import redlock
import redlock.asyncio as aredlock
from conftest import on_every_node

# A short watchdog lease: renewed every 300 ms.
SHORT = {"watchdog_lease_ms": 900}


def pttl(nodes, key):
    return max(int(ms) for ms in on_every_node(nodes, "PTTL", key))


# ---- reentry ----

def test_reentry_with_a_longer_lease_keeps_the_first(client, nodes, prefix):
    rlock = client.get_rlock("job")
    assert rlock.try_lock(lease=2.0)
    assert rlock.try_lock(lease=30.0) and rlock.get_hold_count() == 2
    assert pttl(nodes, prefix + "job") <= 2000
    assert rlock.lock.validity <= 2.0
    rlock.release()
    rlock.release()
    assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5


def test_a_kept_lock_reentered_with_a_short_lease_stays_renewed(nodes, prefix):
    with redlock.Redlock(nodes.uris, key_prefix=prefix, **SHORT) as client:
        rlock = client.get_rlock("job")
        assert rlock.acquire()
        assert rlock.try_lock(wait=1.0, lease=0.3)
        time.sleep(1.5)   # five times the short lease, near twice the kept one
        assert not rlock.lock.lost and rlock.lock.validity > 0
        assert 0 < pttl(nodes, prefix + "job") <= 900
        rlock.release()
        rlock.release()   # the last one: released in time, no error


def test_a_lease_reentered_without_one_is_not_renewed_and_is_lost(nodes, prefix):
    with redlock.Redlock(nodes.uris, key_prefix=prefix, **SHORT) as client:
        rlock = client.get_rlock("job")
        assert rlock.try_lock(lease=0.4)
        assert rlock.acquire() and rlock.get_hold_count() == 2
        assert pttl(nodes, prefix + "job") <= 400
        time.sleep(0.6)
        assert rlock.lock.lost and rlock.lock.validity <= 0
        # Acquiring again after the loss starts afresh: a new acquisition,
        # held once (the lost hold's releases are forgotten, as Redisson's).
        assert rlock.acquire() and rlock.get_hold_count() == 1
        assert not rlock.lock.lost and rlock.lock.validity > 0
        rlock.release()
        assert rlock.get_hold_count() == 0
        with pytest.raises(RuntimeError):
            rlock.release()


def test_a_fresh_attempt_that_fails_leaves_the_loss_to_tell(nodes, prefix):
    with redlock.Redlock(nodes.uris, key_prefix=prefix, **SHORT) as client, \
            redlock.Redlock(nodes.uris, key_prefix=prefix) as other:
        rlock = client.get_rlock("job")
        assert rlock.try_lock(lease=0.3)
        time.sleep(0.4)
        taker = other.get_lock("job")
        assert taker.try_lock(lease=5.0)
        assert not rlock.try_lock()         # a new attempt, refused: held elsewhere
        assert rlock.lock.lost               # the loss is still told
        with pytest.raises(redlock.LockNotHeld):
            rlock.release()


@pytest.mark.asyncio
async def test_asyncio_reentry_keeps_the_first_terms(nodes, prefix):
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix, **SHORT) as client:
        rlock = client.get_rlock("job")
        assert await rlock.acquire()
        assert await rlock.try_lock(lease=0.3) and rlock.get_hold_count() == 2
        await asyncio.sleep(1.5)
        assert not rlock.lock.lost and rlock.lock.validity > 0
        await rlock.release()
        assert rlock.is_held_by_current_task()
        await rlock.release()
        assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5

        leased = client.get_rlock("leased")
        assert await leased.try_lock(lease=0.4)
        assert await leased.try_lock() and leased.get_hold_count() == 2
        assert pttl(nodes, prefix + "leased") <= 400
        await asyncio.sleep(0.6)
        assert leased.lock.lost
        # Acquiring again after the loss starts afresh.
        assert await leased.acquire() and leased.get_hold_count() == 1
        assert not leased.lock.lost
        await leased.release()
        with pytest.raises(RuntimeError):
            await leased.release()


@pytest.mark.asyncio
async def test_asyncio_holds_belong_to_a_task(nodes, prefix):
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix) as client:
        rlock = client.get_rlock("job")
        async with rlock:
            async def contend() -> bool:
                mine = client.get_rlock("job")
                with pytest.raises(RuntimeError):
                    await mine.release()
                return await mine.try_lock(lease=5.0)
            assert not await asyncio.ensure_future(contend())
            async with client.get_rlock("job"):
                assert rlock.get_hold_count() == 2
        assert rlock.get_hold_count() == 0
        assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5


# ---- lost ----

def test_a_lease_that_runs_out_while_held_is_lost(client):
    lock = client.get_lock("job")
    assert lock.try_lock(lease=0.3)
    assert not lock.lost
    time.sleep(0.4)
    assert lock.lost
    with pytest.raises(redlock.LockNotHeld):
        lock.unlock()
    assert lock.lost
    # Released in time: not lost.
    assert lock.try_lock(lease=5.0) and not lock.lost
    lock.unlock()
    assert not lock.lost


@pytest.mark.asyncio
async def test_asyncio_a_lease_that_runs_out_while_held_is_lost(nodes, prefix):
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix) as client:
        lock = client.get_lock("job")
        assert await lock.try_lock(lease=0.3)
        assert not lock.lost
        await asyncio.sleep(0.4)
        assert lock.lost
        with pytest.raises(redlock.LockNotHeld):
            await lock.unlock()
        assert lock.lost
        assert await lock.try_lock(lease=5.0) and not lock.lost
        await lock.unlock()
        assert not lock.lost


# ---- the default wait ----

def test_lock_waits_until_acquired_and_try_lock_once(client, other):
    held = other.get_lock("job")  # kept referenced: a Lock collected is released
    assert held.try_lock(lease=0.5)
    started = time.monotonic()
    assert not client.get_lock("job").try_lock()
    assert time.monotonic() - started < 0.4
    with client.lock("job", lease=5.0) as lock:
        assert lock.is_held()
    assert time.monotonic() - started >= 0.4


@pytest.mark.asyncio
async def test_asyncio_lock_waits_until_acquired_and_try_lock_once(nodes, prefix):
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix) as client, \
            aredlock.Redlock(nodes.uris, key_prefix=prefix) as other:
        held = other.get_lock("job")
        assert await held.try_lock(lease=0.5)
        started = time.monotonic()
        assert not await client.get_lock("job").try_lock()
        assert time.monotonic() - started < 0.4
        async with client.lock("job", lease=5.0) as lock:
            assert lock.is_held()
        assert time.monotonic() - started >= 0.4


# ---- the multi-lock's answer ----

def test_a_multi_lock_is_locked_when_any_resource_is_for_the_longest(client, other):
    multi = client.get_multi_lock("a", "b", "c")
    assert not multi.locked() and multi.remain_time_to_live() is None
    b, c = other.get_lock("b"), other.get_lock("c")
    assert b.try_lock(lease=3.0)
    assert multi.locked() and 2.0 < multi.remain_time_to_live() <= 3.0
    assert c.try_lock(lease=8.0)
    assert 7.0 < multi.remain_time_to_live() <= 8.0
    b.unlock()
    c.unlock()
    assert not multi.locked()


@pytest.mark.asyncio
async def test_asyncio_a_multi_lock_is_locked_when_any_resource_is(nodes, prefix):
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix) as client:
        multi = client.get_multi_lock("a", "b", "c")
        assert not await multi.locked() and await multi.remain_time_to_live() is None
        on_every_node(nodes, "SET", prefix + "b", "someone", "PX", "3000")
        on_every_node(nodes, "SET", prefix + "c", "other")
        assert await multi.locked()
        assert await multi.remain_time_to_live() == math.inf
        on_every_node(nodes, "PEXPIRE", prefix + "c", "8000")
        assert 7.0 < await multi.remain_time_to_live() <= 8.0
