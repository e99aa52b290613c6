"""redlock.asyncio's kept locks: renewed by a task on the loop until
released, and reported lost (flag, callbacks, wait_lost) when renewal fails
for good. Each test runs on asyncio's loop and on uvloop."""

import asyncio
import time
from typing import List, Tuple

import pytest
from conftest import on_every_node, redis_cli

import redlock
import redlock.asyncio as aredlock

pytestmark = pytest.mark.asyncio

KEPT_MS = 900


def keeper(nodes, prefix) -> aredlock.Redlock:
    return aredlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS,
                            node_timeout_ms=100)


async def test_a_lock_without_lease_is_kept_until_released(nodes, prefix):
    async with keeper(nodes, prefix) as client, \
            aredlock.Redlock(nodes.uris, key_prefix=prefix) as other:
        lock = client.get_lock("job")
        assert await lock.try_lock()
        theirs = other.get_lock("job")
        end = time.monotonic() + 3 * KEPT_MS / 1000
        while time.monotonic() < end:
            assert not await theirs.try_lock(lease=5.0)
            assert lock.validity > 0 and not lock.lost
            await asyncio.sleep(0.1)
        waiting = asyncio.ensure_future(lock.wait_lost())
        await lock.unlock()
        assert await asyncio.wait_for(waiting, 1) is None
        assert await theirs.try_lock(lease=5.0)
        await theirs.unlock()


async def test_async_with_keeps_and_no_renewal_follows_unlock(nodes, prefix):
    async with keeper(nodes, prefix) as client:
        async with client.lock("job") as lock:
            await asyncio.sleep(2 * KEPT_MS / 1000)
            assert lock.validity > 0
        lock = client.get_lock("other")
        async with lock:
            await asyncio.sleep(2 * KEPT_MS / 1000)
            assert on_every_node(nodes, "EXISTS", prefix + "other") == ["1"] * 5
        for _ in range(2 * KEPT_MS // 100):
            assert on_every_node(nodes, "EXISTS", prefix + "job", prefix + "other") == ["0"] * 5
            await asyncio.sleep(0.1)


async def test_an_explicit_lease_is_not_renewed(nodes, prefix):
    async with keeper(nodes, prefix) as client:
        lock = client.get_lock("job")
        assert await lock.try_lock(lease=0.5)
        assert await lock.wait_lost() is None
        await asyncio.sleep(0.7)
        # Not renewed, it ran out while held: lost (its keys can have expired).
        assert lock.validity <= 0 and lock.lost
        assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5


async def test_losing_a_majority_reports_the_lock_lost_in_time(nodes, prefix):
    async with keeper(nodes, prefix) as client, \
            aredlock.Redlock(nodes.uris, key_prefix=prefix, node_timeout_ms=100) as other:
        lock = client.get_lock("job")
        told: List[Tuple[float, redlock.LockError]] = []
        lock.on_lost(lambda lost_lock, error: told.append((time.monotonic(), error)))
        assert await lock.try_lock()
        taken: List[float] = []

        async def contend() -> None:
            theirs = other.get_lock("job")
            while True:
                try:
                    if await theirs.try_lock(lease=5.0):
                        break
                except redlock.NoQuorum:
                    pass
                await asyncio.sleep(0.02)
            taken.append(time.monotonic())
            await theirs.unlock()

        contender = asyncio.ensure_future(contend())
        waiting = asyncio.ensure_future(lock.wait_lost())
        deadline = 0.0
        try:
            for uri in nodes.uris[:3]:
                redis_cli(uri, "CLIENT", "PAUSE", "3000", "ALL")
            end = time.monotonic() + 5
            while not told and time.monotonic() < end:
                deadline = max(deadline, time.monotonic() + lock.validity)
                await asyncio.sleep(0.002)
        finally:
            for uri in nodes.uris[:3]:
                redis_cli(uri, "CLIENT", "UNPAUSE")
        await asyncio.wait_for(contender, 10)

        assert len(told) == 1, "the loss was reported once"
        when, error = told[0]
        assert isinstance(error, (redlock.LockNotHeld, redlock.LockExpired))
        assert when <= deadline + 0.1
        assert await asyncio.wait_for(waiting, 1) is error
        assert lock.lost and lock.validity <= 0
        assert taken[0] > when
        with pytest.raises(redlock.LockNotHeld):
            await lock.unlock()
        late: List[redlock.LockError] = []
        assert await lock.try_lock(wait=2.0)
        assert not lock.lost
        lock.on_lost(lambda lost_lock, error: late.append(error))
        assert late == []
        await lock.unlock()


async def test_a_lock_taken_over_is_lost_and_a_failing_callback_is_reported(nodes, prefix):
    loop = asyncio.get_running_loop()
    reported: List[BaseException] = []
    loop.set_exception_handler(lambda loop, context: reported.append(context["exception"]))
    try:
        async with keeper(nodes, prefix) as client:
            lock = client.get_lock("job")
            kept = client.get_lock("kept")

            def fails(lost_lock: aredlock.Lock, error: redlock.LockError) -> None:
                raise RuntimeError("a callback that fails")

            lock.on_lost(fails)
            assert await lock.try_lock() and await kept.try_lock()
            for uri in nodes.uris[:3]:
                assert redis_cli(uri, "SET", prefix + "job", "someone") == "OK"
            error = await asyncio.wait_for(lock.wait_lost(), 2 * KEPT_MS / 1000)
            assert isinstance(error, redlock.LockNotHeld)
            assert [str(exc) for exc in reported] == ["a callback that fails"]
            late: List[redlock.LockError] = []
            lock.on_lost(lambda lost_lock, error: late.append(error))
            assert late == [error]
            await asyncio.sleep(2 * KEPT_MS / 1000)
            assert kept.validity > 0 and not kept.lost
            await kept.unlock()
    finally:
        loop.set_exception_handler(None)


async def test_the_owners_extension_of_a_kept_lock_goes_through_its_keeper(nodes, prefix):
    """The owner's extend of a kept lock is one of its keeper's: extensions
    asked at once run one at a time, the lock stays kept by the new lease,
    and one that finds the lock taken over tells it lost at once, as a
    renewal would."""
    async with keeper(nodes, prefix) as client:
        lock = client.get_lock("job")
        told: List[redlock.LockError] = []
        lock.on_lost(lambda lost_lock, error: told.append(error))
        assert await lock.try_lock()
        await asyncio.gather(*(lock.extend(3.0) for _ in range(5)))
        assert 2.5 < lock.validity <= 3.0 and not lock.lost
        await asyncio.sleep(3 * KEPT_MS / 1000)
        assert lock.validity > 1.0 and not lock.lost
        assert all(int(ttl) > 1000 for ttl in on_every_node(nodes, "PTTL", prefix + "job"))
        for uri in nodes.uris[:3]:
            assert redis_cli(uri, "SET", prefix + "job", "someone") == "OK"
        with pytest.raises(redlock.LockNotHeld):
            await lock.extend(3.0)
        assert lock.lost and len(told) == 1 and isinstance(told[0], redlock.LockNotHeld)
        assert await lock.wait_lost() is told[0]


async def test_a_cancelled_unlock_of_a_kept_lock_still_releases(nodes, prefix):
    async with keeper(nodes, prefix) as client:
        lock = client.get_lock("job")
        assert await lock.try_lock()
        unlock = asyncio.ensure_future(lock.unlock())
        await asyncio.sleep(0)
        unlock.cancel()
        with pytest.raises(asyncio.CancelledError):
            await unlock
        deadline = time.monotonic() + 2
        while on_every_node(nodes, "EXISTS", prefix + "job") != ["0"] * 5:
            assert time.monotonic() < deadline, "the release never came"
            await asyncio.sleep(0.02)
        for _ in range(2 * KEPT_MS // 100):
            assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5
            await asyncio.sleep(0.1)
