"""Fair locks (client.get_fair_lock: waiters served in the order they
arrived, as Redisson's RFairLock) and synchronize(fair=True), sync and
asyncio, against five real nodes. The asyncio tests run on asyncio's loop
and on uvloop."""

from __future__ import annotations

import asyncio
import math
import subprocess
import threading
import time
from contextlib import ExitStack
from typing import Any, Callable, Dict, List

import pytest
from conftest import on_every_node

import redlock
import redlock.asyncio as aredlock

# Short enough for the tests to outlive several leases; renewed every 300 ms.
KEPT_MS = 900

# Retries that come after a waiter's wait has ended: such a waiter gets the
# lock only when the release before it wakes it (on its own channel).
WOKEN = {"retry_delay_ms": 8000, "retry_jitter_ms": 0}
WOKEN_WAIT = 6.0
# Quick retries: a waiter that gives up keeps its place 2 x (50 + 10 + 200) ms.
QUICK = {"retry_delay_ms": 50, "retry_jitter_ms": 10, "node_timeout_ms": 200}

# How long a waiter holds the lock once its turn has come.
HOLD = 0.1

# How long a change on the nodes may take to be seen, at the most.
CONVERGE = 10.0

BAD_TIMES = [({"wait": -1}, ValueError), ({"wait": math.nan}, ValueError),
             ({"wait": "1"}, TypeError), ({"lease": 0}, ValueError),
             ({"lease": 3e9}, ValueError), ({"lease": True}, TypeError)]


def queued_on_nodes(nodes, key: str) -> List[int]:
    """How many waiters each node queues for the fair lock of key, live or
    not: its queue is the key beside the lock's (the key, a zero byte and
    "queue"), holding "counter ticket:id:expiry ..." (none: no queue)."""
    counts = []
    for uri in nodes.uris:
        port = uri.rsplit(":", 1)[1]
        # redis-cli reads a command from its input with escapes: the zero byte.
        out = subprocess.run(["redis-cli", "-p", port], check=True, capture_output=True,
                             text=True, input=f'GET "{key}\\x00queue"\n').stdout.split()
        counts.append(max(len(out) - 1, 0))
    return counts


async def eventually(condition: Callable[[], bool]) -> bool:
    """Whether condition() turns true within CONVERGE seconds. It blocks
    (it runs redis-cli): on a loop, it runs on another thread, and the
    tasks on the loop run meanwhile."""
    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + CONVERGE
    while not await loop.run_in_executor(None, condition):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def until(condition: Callable[[], bool]) -> bool:
    """eventually(), for the sync tests (no loop runs in them)."""
    return asyncio.run(eventually(condition))


def clients(nodes, prefix: str, n: int, stack: ExitStack, **options) -> List[redlock.Redlock]:
    return [stack.enter_context(redlock.Redlock(nodes.uris, key_prefix=prefix, **options))
            for _ in range(n)]


def start_waiter(client: redlock.Redlock, name: str, wait: float, order: List[int],
                 results: Dict[int, Any], i: int) -> threading.Thread:
    """Waiter i on a thread of its own: waits up to `wait` seconds for the
    fair lock of name; once it has it, records its turn in order, holds it
    briefly and releases it. results[i]: whether it got it, or what it
    raised."""
    def run() -> None:
        lock = client.get_fair_lock(name)
        try:
            results[i] = lock.try_lock(wait=wait, lease=5.0)
            if results[i]:
                order.append(i)
                time.sleep(HOLD)
                lock.unlock()
        except BaseException as exc:  # noqa: B902 - the test reports it
            results[i] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def joined(stack: ExitStack) -> List[threading.Thread]:
    """A list of threads that are joined when stack closes: before the
    clients entered in it earlier are closed, should the test fail while
    they wait."""
    threads: List[threading.Thread] = []
    stack.callback(lambda: [thread.join(30) for thread in threads])
    return threads


# ---- redlock (sync) ----


@pytest.mark.parametrize("options, wait", [({}, 15.0), (WOKEN, WOKEN_WAIT)],
                         ids=["retrying", "woken"])
def test_waiters_are_served_in_the_order_they_arrived(nodes, prefix, options, wait) -> None:
    with ExitStack() as stack:
        holder = clients(nodes, prefix, 1, stack)[0].get_fair_lock("order")
        waiters = clients(nodes, prefix, 3, stack, **options)
        threads = joined(stack)
        assert holder.try_lock(lease=10.0)
        order: List[int] = []
        results: Dict[int, Any] = {}
        for i, waiter in enumerate(waiters):
            threads.append(start_waiter(waiter, "order", wait, order, results, i))
            # Queued on every node before the next one comes.
            assert until(lambda: queued_on_nodes(nodes, prefix + "order") == [i + 1] * 5)
        assert order == []
        holder.unlock()
        for thread in threads:
            thread.join(30)
        assert results == {0: True, 1: True, 2: True}
        assert order == [0, 1, 2]
        assert queued_on_nodes(nodes, prefix + "order") == [0] * 5
        assert on_every_node(nodes, "GET", prefix + "order") == [""] * 5


def test_a_waiter_that_gives_up_leaves_the_queue(nodes, prefix) -> None:
    with ExitStack() as stack:
        holder = clients(nodes, prefix, 1, stack)[0].get_fair_lock("leave")
        first, second = clients(nodes, prefix, 2, stack, **QUICK)
        threads = joined(stack)
        assert holder.try_lock(lease=10.0)
        order: List[int] = []
        results: Dict[int, Any] = {}
        gives_up = start_waiter(first, "leave", 1.0, order, results, 0)
        threads.append(gives_up)
        assert until(lambda: queued_on_nodes(nodes, prefix + "leave") == [1] * 5)
        stays = start_waiter(second, "leave", 15.0, order, results, 1)
        threads.append(stays)
        assert until(lambda: queued_on_nodes(nodes, prefix + "leave") == [2] * 5)
        gives_up.join(30)
        assert results == {0: False}
        # Its place lapses soon after its last attempt: the second is alone.
        assert until(lambda: queued_on_nodes(nodes, prefix + "leave") == [1] * 5)
        holder.unlock()
        stays.join(30)
        assert results == {0: False, 1: True} and order == [1]


def test_the_plain_lock_of_the_name_and_the_fair_one_exclude_each_other(nodes, prefix, client,
                                                                         other) -> None:
    fair = client.get_fair_lock("both")
    assert isinstance(fair, redlock.Lock) and fair.names == ("both",)
    assert repr(fair) == "<redlock.Lock 'both' (fair) not held>"
    assert fair.try_lock(lease=5.0)
    assert repr(fair) == "<redlock.Lock 'both' (fair) held>"
    assert on_every_node(nodes, "GET", prefix + "both") == [fair.token] * 5   # the plain key
    plain = other.get_lock("both")
    assert not plain.try_lock(lease=1.0)
    assert plain.locked() and 0 < plain.remain_time_to_live() <= 5.0
    assert not other.get_fair_lock("both").try_lock(lease=1.0)
    fair.extend(8.0)
    assert 7.0 < fair.validity <= 8.0
    fair.unlock()
    assert not fair.is_held() and not fair.lost

    assert plain.try_lock(lease=5.0)
    assert not fair.try_lock(lease=1.0)
    assert not client.get_fair_lock("both").try_lock(wait=0.2, lease=1.0)
    plain.unlock()
    with fair:   # kept, then released on leaving
        assert fair.is_held() and not plain.try_lock(lease=1.0)
    assert on_every_node(nodes, "GET", prefix + "both") == [""] * 5


def test_a_fair_lock_has_no_fence(nodes, prefix) -> None:
    with redlock.Redlock(nodes.uris, key_prefix=prefix, fencing=1) as fenced:
        plain = fenced.get_lock("fenced")
        assert plain.try_lock(lease=5.0) and plain.fence is not None
        plain.unlock()
        fair = fenced.get_fair_lock("fenced")
        assert fair.try_lock(lease=5.0)
        assert fair.fence is None and fair.fences == {}
        fair.unlock()


def test_a_kept_fair_lock_outlives_the_watchdog_lease(nodes, prefix, other) -> None:
    with redlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS) as keeper:
        fair = keeper.get_fair_lock("kept")
        lost: List[object] = []
        fair.on_lost(lambda lock, error: lost.append(error))
        assert fair.try_lock()   # no lease: kept
        assert fair.validity <= KEPT_MS / 1000
        time.sleep(3 * KEPT_MS / 1000)
        assert fair.is_held() and not fair.lost and not lost
        assert not other.get_fair_lock("kept").try_lock(lease=1.0)
        assert not other.get_lock("kept").try_lock(lease=1.0)
        fair.unlock()
        assert not fair.lost and not lost
        assert on_every_node(nodes, "GET", prefix + "kept") == [""] * 5


def test_synchronize_fair_runs_the_function_under_the_fair_lock(nodes, prefix, client,
                                                                other) -> None:
    holder = other.get_fair_lock("sync")
    assert holder.try_lock(lease=10.0)
    seen: List[bool] = []

    @client.synchronize("sync", wait=15.0, lease=5.0, fair=True)
    def work(x: int) -> int:
        """Doubles x."""
        seen.append(other.get_lock("sync").try_lock(lease=1.0))
        return 2 * x

    assert work.__doc__ == "Doubles x." and work.__name__ == "work"
    results: List[object] = []
    call = threading.Thread(target=lambda: results.append(work(21)))
    call.start()
    try:
        # A fair waiter: queued on every node while the lock is held.
        assert until(lambda: queued_on_nodes(nodes, prefix + "sync") == [1] * 5)
        assert not seen
    finally:
        holder.unlock()
        call.join(30)
    assert results == [42] and seen == [False]   # held while it ran
    assert on_every_node(nodes, "GET", prefix + "sync") == [""] * 5   # released after

    @client.synchronize("sync", wait=0.1, fair=True)
    def blocked() -> None:
        raise AssertionError("ran without the lock")

    assert holder.try_lock(lease=10.0)
    with pytest.raises(redlock.LockNotAcquired):
        blocked()
    holder.unlock()
    with pytest.raises(TypeError, match="coroutine"):
        @client.synchronize("sync", fair=True)
        async def not_here() -> None:
            pass
    with pytest.raises(ValueError):
        client.synchronize("", fair=True)


def test_bad_input_is_refused_as_for_get_lock(client) -> None:
    for name in (None, 5, b"job"):
        with pytest.raises(TypeError):
            client.get_fair_lock(name)
    with pytest.raises(TypeError):
        client.get_fair_lock("a", "b")
    for name in ("", "x" * 5000, "a\0b"):
        with pytest.raises(ValueError):
            client.get_fair_lock(name).try_lock()
    fair = client.get_fair_lock("bad")
    for kwargs, error in BAD_TIMES:
        with pytest.raises(error):
            fair.try_lock(**kwargs)
    with pytest.raises(ValueError):
        fair.acquire(timeout=-2)
    with pytest.raises(redlock.LockNotHeld):
        fair.unlock()
    with pytest.raises(redlock.LockNotHeld):
        fair.extend(1.0)
    assert not fair.locked()   # nothing was taken
    client.close()
    with pytest.raises(ValueError, match="closed"):
        client.get_fair_lock("bad")


# ---- redlock.asyncio ----


def aclients(nodes, prefix: str, n: int, **options) -> List[aredlock.Redlock]:
    return [aredlock.Redlock(nodes.uris, key_prefix=prefix, **options) for _ in range(n)]


async def close_all(made: List[aredlock.Redlock], tasks: List[asyncio.Future[Any]]) -> None:
    """Ends the tasks still waiting (a test that failed), then closes the
    clients."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for c in made:
        await c.close()


async def waiter_task(client: aredlock.Redlock, name: str, wait: float,
                      order: List[int], i: int) -> bool:
    """Waiter i as a task: waits up to `wait` seconds for the fair lock of
    name; once it has it, records its turn in order, holds it briefly and
    releases it. Whether it got it."""
    lock = client.get_fair_lock(name)
    if not await lock.try_lock(wait=wait, lease=5.0):
        return False
    order.append(i)
    await asyncio.sleep(HOLD)
    await lock.unlock()
    return True


@pytest.mark.asyncio
@pytest.mark.parametrize("options, wait", [({}, 15.0), (WOKEN, WOKEN_WAIT)],
                         ids=["retrying", "woken"])
async def test_asyncio_waiters_are_served_in_the_order_they_arrived(nodes, prefix, options,
                                                                    wait) -> None:
    holder_client = aredlock.Redlock(nodes.uris, key_prefix=prefix)
    made = aclients(nodes, prefix, 3, **options)
    tasks: List[asyncio.Future[Any]] = []
    try:
        holder = holder_client.get_fair_lock("order")
        assert isinstance(holder, aredlock.Lock)
        assert await holder.try_lock(lease=10.0)
        order: List[int] = []
        for i, waiter in enumerate(made):
            tasks.append(asyncio.ensure_future(waiter_task(waiter, "order", wait, order, i)))
            assert await eventually(
                lambda: queued_on_nodes(nodes, prefix + "order") == [i + 1] * 5)
        assert order == []
        await holder.unlock()
        assert await asyncio.wait_for(asyncio.gather(*tasks), 30) == [True, True, True]
        assert order == [0, 1, 2]
        assert queued_on_nodes(nodes, prefix + "order") == [0] * 5
    finally:
        await close_all([holder_client, *made], tasks)


@pytest.mark.asyncio
async def test_asyncio_a_waiter_that_gives_up_leaves_the_queue(nodes, prefix) -> None:
    holder_client = aredlock.Redlock(nodes.uris, key_prefix=prefix)
    first, second = aclients(nodes, prefix, 2, **QUICK)
    tasks: List[asyncio.Future[Any]] = []
    try:
        holder = holder_client.get_fair_lock("leave")
        assert await holder.try_lock(lease=10.0)
        order: List[int] = []
        gives_up = asyncio.ensure_future(waiter_task(first, "leave", 1.0, order, 0))
        tasks.append(gives_up)
        assert await eventually(lambda: queued_on_nodes(nodes, prefix + "leave") == [1] * 5)
        stays = asyncio.ensure_future(waiter_task(second, "leave", 15.0, order, 1))
        tasks.append(stays)
        assert await eventually(lambda: queued_on_nodes(nodes, prefix + "leave") == [2] * 5)
        assert await asyncio.wait_for(gives_up, 30) is False
        assert await eventually(lambda: queued_on_nodes(nodes, prefix + "leave") == [1] * 5)
        await holder.unlock()
        assert await asyncio.wait_for(stays, 30) is True and order == [1]
    finally:
        await close_all([holder_client, first, second], tasks)


@pytest.mark.asyncio
async def test_asyncio_plain_and_fair_exclude_each_other_and_a_kept_one_is_renewed(
        nodes, prefix) -> None:
    one = aredlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS)
    two = aredlock.Redlock(nodes.uris, key_prefix=prefix)
    try:
        fair = one.get_fair_lock("both")
        assert repr(fair) == "<redlock.asyncio.Lock 'both' (fair) not held>"
        assert await fair.try_lock(lease=5.0)
        assert repr(fair) == "<redlock.asyncio.Lock 'both' (fair) held>"
        assert on_every_node(nodes, "GET", prefix + "both") == [fair.token] * 5
        plain = two.get_lock("both")
        assert not await plain.try_lock(lease=1.0)
        assert await plain.locked() and fair.fence is None
        await fair.extend(8.0)
        assert 7.0 < fair.validity <= 8.0
        await fair.unlock()
        assert await plain.try_lock(lease=5.0)
        assert not await fair.try_lock(lease=1.0)
        assert not await one.get_fair_lock("both").try_lock(wait=0.2, lease=1.0)
        await plain.unlock()

        lost: List[object] = []
        fair.on_lost(lambda lock, error: lost.append(error))
        async with fair:   # kept
            await asyncio.sleep(3 * KEPT_MS / 1000)
            assert fair.is_held() and not fair.lost and not lost
            assert not await plain.try_lock(lease=1.0)
            assert not await two.get_fair_lock("both").try_lock(lease=1.0)
            waiting = asyncio.ensure_future(fair.wait_lost())
        assert await asyncio.wait_for(waiting, 1) is None and not lost and not fair.lost
        assert on_every_node(nodes, "GET", prefix + "both") == [""] * 5
    finally:
        await close_all([one, two], [])


@pytest.mark.asyncio
async def test_asyncio_synchronize_fair_runs_the_function_under_the_fair_lock(
        nodes, prefix) -> None:
    one, two = aclients(nodes, prefix, 2)
    tasks: List[asyncio.Future[Any]] = []
    try:
        holder = two.get_fair_lock("sync")
        assert await holder.try_lock(lease=10.0)
        seen: List[bool] = []

        @one.synchronize("sync", wait=15.0, fair=True)
        async def work(x: int) -> int:
            seen.append(await two.get_lock("sync").try_lock(lease=1.0))
            return x + 1

        call = asyncio.ensure_future(work(1))
        tasks.append(call)
        assert await eventually(lambda: queued_on_nodes(nodes, prefix + "sync") == [1] * 5)
        assert not seen
        await holder.unlock()
        assert await asyncio.wait_for(call, 30) == 2
        assert seen == [False]
        assert on_every_node(nodes, "GET", prefix + "sync") == [""] * 5
        with pytest.raises(TypeError, match="not a coroutine"):
            @one.synchronize("sync", fair=True)
            def plain() -> None:
                pass
    finally:
        await close_all([one, two], tasks)


@pytest.mark.asyncio
async def test_asyncio_bad_input_is_refused_as_for_get_lock(nodes, prefix) -> None:
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix) as client:
        for name in (None, 5, b"job"):
            with pytest.raises(TypeError):
                client.get_fair_lock(name)
        for name in ("", "x" * 5000, "a\0b"):
            with pytest.raises(ValueError):
                await client.get_fair_lock(name).try_lock()
        fair = client.get_fair_lock("bad")
        for kwargs, error in BAD_TIMES:
            with pytest.raises(error):
                await fair.try_lock(**kwargs)
        with pytest.raises(redlock.LockNotHeld):
            await fair.unlock()
        with pytest.raises(ValueError):
            client.synchronize("", fair=True)
        assert not await fair.locked()
    with pytest.raises(ValueError, match="closed"):
        client.get_fair_lock("bad")
