"""Semaphores (client.get_semaphore: permits with an id and a lease each,
as Redisson's RPermitExpirableSemaphore), sync and asyncio, against five
real nodes. The asyncio tests run on asyncio's loop and on uvloop."""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
import time
from contextlib import ExitStack
from typing import List

import pytest

import redlock
import redlock.asyncio as aredlock

# Short enough for the tests to outlive several leases; renewed every 300 ms.
KEPT_MS = 900

BAD_PERMITS = [0, -1, 10001, True, "2", 2.0, None]


def is_id(text: object) -> bool:
    return isinstance(text, str) and re.fullmatch(r"[0-9a-f]{32}", text) is not None


def permits_on_nodes(nodes, key: str) -> List[List[str]]:
    """The permit ids each node holds for the semaphore key (the key's
    value is "P id:expiry id:expiry ..."; its own key is the name's, a zero
    byte and "permits"). An empty list: no key."""
    held = []
    for uri in nodes.uris:
        port = uri.rsplit(":", 1)[1]
        # redis-cli reads a command from its input with escapes: the zero byte.
        out = subprocess.run(["redis-cli", "-p", port], check=True, capture_output=True,
                             text=True, input=f'GET "{key}\\x00permits"\n').stdout.split()
        held.append(sorted(entry.split(":")[0] for entry in out[1:]))
    return held


def clients(nodes, prefix: str, n: int, stack: ExitStack, **options) -> List[redlock.Redlock]:
    return [stack.enter_context(redlock.Redlock(nodes.uris, key_prefix=prefix, **options))
            for _ in range(n)]


# ---- redlock (sync) ----


def test_at_most_p_permits_are_held_and_a_release_lets_another_in(nodes, prefix) -> None:
    with ExitStack() as stack:
        four = clients(nodes, prefix, 4, stack, retry_delay_ms=50)
        semaphores = [c.get_semaphore("pool", 3) for c in four]
        taken = [s.try_acquire(lease=10.0) for s in semaphores[:3]]
        assert all(isinstance(p, redlock.Permit) and p.held for p in taken)
        ids = [p.id for p in taken]
        assert all(is_id(i) for i in ids) and len(set(ids)) == 3
        assert permits_on_nodes(nodes, prefix + "pool") == [sorted(ids)] * 5
        assert semaphores[3].try_acquire(lease=10.0) is None
        assert semaphores[3].try_acquire(wait=0.3, lease=10.0) is None

        taken[1].release()
        assert not taken[1].held and taken[1].id == ids[1]   # the id stays
        fourth = semaphores[3].try_acquire(lease=10.0)
        assert fourth is not None and is_id(fourth.id) and fourth.id not in ids
        assert semaphores[1].try_acquire(lease=10.0) is None
        for p in (taken[0], taken[2], fourth):
            p.release()
        assert permits_on_nodes(nodes, prefix + "pool") == [[]] * 5


def test_available_permits_counts_what_is_taken(client, other) -> None:
    semaphore = client.get_semaphore("count", 3)
    theirs = other.get_semaphore("count", 3)
    assert semaphore.available_permits() == 3
    permits = [semaphore.try_acquire(lease=10.0), theirs.try_acquire(), semaphore.acquire()]
    assert None not in permits
    assert semaphore.available_permits() == 0 and theirs.available_permits() == 0
    permits[1].release()
    assert semaphore.available_permits() == 1
    permits[0].release()
    permits[2].release()
    assert theirs.available_permits() == 3


def test_acquire_waits_for_a_release(client, other) -> None:
    held = client.get_semaphore("wait", 1).try_acquire(lease=10.0)
    assert held is not None
    got: List[redlock.Permit] = []
    waiting = threading.Thread(target=lambda: got.append(other.get_semaphore("wait", 1)
                                                         .acquire(lease=5.0)))
    waiting.start()
    time.sleep(0.3)
    assert not got   # still waiting
    held.release()
    waiting.join(10)
    assert len(got) == 1 and got[0].held and got[0].id != held.id
    got[0].release()


def test_another_number_of_permits_is_refused_naming_both(nodes, prefix, client, other) -> None:
    mine = client.get_semaphore("mixed", 3).try_acquire(lease=10.0)
    assert mine is not None
    wrong = other.get_semaphore("mixed", 5)
    with pytest.raises(redlock.InvalidArgument) as refused:
        wrong.try_acquire()
    assert "has 3 permits" in str(refused.value) and "not 5" in str(refused.value)
    with pytest.raises(redlock.InvalidArgument, match="not 5"):
        wrong.available_permits()
    with pytest.raises(redlock.InvalidArgument, match="has 3 permits"):
        with wrong.permit(wait=0):
            raise AssertionError("entered with another number of permits")
    mine.release()
    # Once no permit is held, another number may be used: the release
    # answers once a permit's quorum (4 of 5) let go, the last node after.
    deadline = time.monotonic() + 10
    while any(permits_on_nodes(nodes, f"{prefix}mixed")):
        assert time.monotonic() < deadline, "every node lets go of the permit"
        time.sleep(0.01)
    again = wrong.try_acquire(lease=10.0)
    assert again is not None
    again.release()


def test_an_expired_permit_is_reclaimed(client, other) -> None:
    short = client.get_semaphore("expire", 1).try_acquire(lease=1.5)
    assert short is not None and 0 < short.validity <= 1.5
    theirs = other.get_semaphore("expire", 1)
    assert theirs.try_acquire(lease=5.0) is None
    time.sleep(2.0)
    assert not short.held and short.lost
    taken = theirs.try_acquire(lease=5.0)
    assert taken is not None and taken.id != short.id
    with pytest.raises(redlock.LockNotHeld):
        short.release()
    taken.release()


def test_a_kept_permit_outlives_the_watchdog_lease(nodes, prefix, other) -> None:
    with redlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS) as keeper:
        permit = keeper.get_semaphore("kept", 1).try_acquire()   # no lease: kept
        assert permit is not None
        assert KEPT_MS / 1000 - 0.2 < permit.validity <= KEPT_MS / 1000
        lost: List[object] = []
        permit.on_lost(lambda p, error: lost.append(error))
        theirs = other.get_semaphore("kept", 1)
        time.sleep(3 * KEPT_MS / 1000)
        assert permit.held and not permit.lost and not lost
        assert theirs.try_acquire(lease=1.0) is None
        assert theirs.available_permits() == 0
        permit.extend(5.0)
        assert 4.0 < permit.validity <= 5.0
        permit.release()
        taken = theirs.try_acquire(lease=1.0)
        assert taken is not None
        taken.release()
        assert not lost


def test_the_scoped_forms_release_on_exit_even_when_the_body_raises(nodes, prefix,
                                                                    client, other) -> None:
    semaphore = client.get_semaphore("scoped", 1)
    theirs = other.get_semaphore("scoped", 1)
    with semaphore.permit(wait=1.0, lease=10.0) as permit:
        assert permit.held and is_id(permit.id)
        assert theirs.try_acquire() is None
        with pytest.raises(redlock.LockNotAcquired):
            with theirs.permit(wait=0.2):
                raise AssertionError("entered with no permit free")
    assert not permit.held
    assert permits_on_nodes(nodes, prefix + "scoped") == [[]] * 5

    with pytest.raises(KeyError):
        with semaphore.permit() as kept:   # kept, waiting until had
            assert theirs.available_permits() == 0
            raise KeyError("the body failed")
    assert not kept.held and semaphore.available_permits() == 1

    with pytest.raises(KeyError):
        with theirs.try_acquire(lease=10.0) as taken:
            assert taken.held and semaphore.try_acquire() is None
            raise KeyError("the body failed")
    assert not taken.held and semaphore.available_permits() == 1
    with pytest.raises(redlock.LockNotHeld):
        taken.release()


def test_a_permit_is_not_taken_again_nor_a_lock(client) -> None:
    semaphore = client.get_semaphore("lockish", 2)
    permit = semaphore.try_acquire(lease=10.0)
    assert permit is not None and permit.semaphore is semaphore
    assert isinstance(permit, redlock.Lock) and permit.fence is None
    for call in (permit.try_lock, permit.acquire, permit.locked, permit.remain_time_to_live,
                 permit.force_unlock):
        with pytest.raises(TypeError, match="Permit"):
            call()
    # A lock of the same name is another thing: no exclusion.
    lock = client.get_lock("lockish")
    assert lock.try_lock(lease=5.0)
    lock.unlock()
    assert repr(semaphore) == "<redlock.Semaphore 'lockish' permits=2>"
    assert repr(permit).startswith(f"<redlock.Permit {permit.id[:8]}... of 'lockish'")
    assert permit.id not in repr(permit) and repr(permit).endswith(" held>")
    permit.release()
    with pytest.raises(redlock.LockNotHeld):
        permit.release()
    assert repr(permit).endswith(" not held>")


def test_bad_input_is_refused(client) -> None:
    for permits in BAD_PERMITS:
        with pytest.raises(redlock.InvalidArgument, match="permits must be"):
            client.get_semaphore("bad", permits)
    with pytest.raises(TypeError):
        client.get_semaphore(7, 2)
    semaphore = client.get_semaphore("bad", 10000)
    assert semaphore.name == "bad" and semaphore.permits == 10000
    with pytest.raises(ValueError):
        semaphore.try_acquire(wait=-1.0)
    with pytest.raises(ValueError):
        semaphore.try_acquire(lease=0)
    with pytest.raises(TypeError):
        semaphore.try_acquire(wait="1")
    with pytest.raises(ValueError):
        with semaphore.permit(wait=-0.5):
            raise AssertionError("entered with a negative wait")
    with pytest.raises(ValueError):
        semaphore.acquire(lease=-1.0)
    assert semaphore.available_permits() == 10000   # nothing was taken
    client.close()
    with pytest.raises(ValueError, match="closed"):
        client.get_semaphore("bad", 2)


# ---- redlock.asyncio ----


def aclients(nodes, prefix: str, n: int, **options) -> List[aredlock.Redlock]:
    return [aredlock.Redlock(nodes.uris, key_prefix=prefix, **options) for _ in range(n)]


async def close_all(made: List[aredlock.Redlock]) -> None:
    for c in made:
        await c.close()


@pytest.mark.asyncio
async def test_asyncio_at_most_p_held_and_available_permits(nodes, prefix) -> None:
    made = aclients(nodes, prefix, 3, retry_delay_ms=50)
    try:
        semaphores = [c.get_semaphore("pool", 2) for c in made]
        assert isinstance(semaphores[0], aredlock.Semaphore)
        assert await semaphores[0].available_permits() == 2
        first = await semaphores[0].try_acquire(lease=10.0)
        second = await semaphores[1].try_acquire()   # kept
        assert isinstance(first, aredlock.Permit) and isinstance(second, aredlock.Permit)
        assert is_id(first.id) and is_id(second.id) and first.id != second.id
        assert permits_on_nodes(nodes, prefix + "pool") == [sorted([first.id, second.id])] * 5
        assert await semaphores[2].try_acquire(lease=10.0) is None
        assert await semaphores[2].available_permits() == 0

        waiting = asyncio.ensure_future(semaphores[2].try_acquire(wait=5.0, lease=10.0))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await second.release()
        third = await waiting
        assert third is not None and third.id not in (first.id, second.id)
        await first.release()
        assert await semaphores[0].available_permits() == 1
        with pytest.raises(redlock.LockNotHeld):
            await first.release()
        await third.release()
        assert await semaphores[1].available_permits() == 2
        assert permits_on_nodes(nodes, prefix + "pool") == [[]] * 5
    finally:
        await close_all(made)


@pytest.mark.asyncio
async def test_asyncio_acquire_waits_and_another_number_is_refused(nodes, prefix) -> None:
    one, two = aclients(nodes, prefix, 2, retry_delay_ms=50)
    try:
        held = await one.get_semaphore("mixed", 3).acquire(lease=10.0)
        with pytest.raises(redlock.InvalidArgument) as refused:
            await two.get_semaphore("mixed", 5).try_acquire()
        assert "has 3 permits" in str(refused.value) and "not 5" in str(refused.value)
        with pytest.raises(redlock.InvalidArgument, match="not 5"):
            await two.get_semaphore("mixed", 5).available_permits()

        single = await one.get_semaphore("one", 1).acquire()
        waiting = asyncio.ensure_future(two.get_semaphore("one", 1).acquire(lease=5.0))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        await single.release()
        got = await asyncio.wait_for(waiting, 10)
        assert got.held and got.id != single.id
        await got.release()
        await held.release()
    finally:
        await close_all([one, two])


@pytest.mark.asyncio
async def test_asyncio_expired_permit_is_reclaimed_and_kept_one_is_not(nodes, prefix) -> None:
    keeper = aredlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS)
    other = aredlock.Redlock(nodes.uris, key_prefix=prefix)
    try:
        short = await keeper.get_semaphore("expire", 1).try_acquire(lease=1.5)
        assert short is not None
        theirs = other.get_semaphore("expire", 1)
        assert await theirs.try_acquire(lease=5.0) is None
        await asyncio.sleep(2.0)
        assert not short.held and short.lost
        reclaimed = await theirs.try_acquire(lease=5.0)
        assert reclaimed is not None
        with pytest.raises(redlock.LockNotHeld):
            await short.release()
        await reclaimed.release()

        kept = await keeper.get_semaphore("kept", 1).try_acquire()
        assert kept is not None
        lost: List[object] = []
        kept.on_lost(lambda p, error: lost.append(error))
        await asyncio.sleep(3 * KEPT_MS / 1000)
        assert kept.held and not kept.lost and not lost
        assert await other.get_semaphore("kept", 1).try_acquire(lease=1.0) is None
        await kept.extend(5.0)
        assert 4.0 < kept.validity <= 5.0
        waiting = asyncio.ensure_future(kept.wait_lost())
        await kept.release()
        assert await asyncio.wait_for(waiting, 1) is None and not lost
    finally:
        await close_all([keeper, other])


@pytest.mark.asyncio
async def test_asyncio_scoped_forms_release_on_exit(nodes, prefix) -> None:
    one, two = aclients(nodes, prefix, 2)
    try:
        semaphore = one.get_semaphore("scoped", 1)
        theirs = two.get_semaphore("scoped", 1)
        async with semaphore.permit(wait=1.0, lease=10.0) as permit:
            assert permit.held and is_id(permit.id)
            with pytest.raises(redlock.LockNotAcquired):
                async with theirs.permit(wait=0.2):
                    raise AssertionError("entered with no permit free")
        assert not permit.held and await theirs.available_permits() == 1

        with pytest.raises(KeyError):
            async with semaphore.permit() as kept:
                assert await theirs.try_acquire() is None
                raise KeyError("the body failed")
        assert not kept.held and await theirs.available_permits() == 1

        taken = await theirs.try_acquire(lease=10.0)
        with pytest.raises(KeyError):
            async with taken:
                assert await semaphore.try_acquire() is None
                raise KeyError("the body failed")
        assert not taken.held and await semaphore.available_permits() == 1
        assert permits_on_nodes(nodes, prefix + "scoped") == [[]] * 5
    finally:
        await close_all([one, two])


@pytest.mark.asyncio
async def test_asyncio_bad_input_is_refused(nodes, prefix) -> None:
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix) as client:
        for permits in BAD_PERMITS:
            with pytest.raises(redlock.InvalidArgument, match="permits must be"):
                client.get_semaphore("bad", permits)
        semaphore = client.get_semaphore("bad", 2)
        assert repr(semaphore) == "<redlock.asyncio.Semaphore 'bad' permits=2>"
        with pytest.raises(ValueError):
            await semaphore.try_acquire(wait=-1.0)
        with pytest.raises(ValueError):
            async with semaphore.permit(wait=-0.5):
                raise AssertionError("entered with a negative wait")
        with pytest.raises(ValueError):
            await semaphore.acquire(lease=0)
        permit = await semaphore.try_acquire(lease=5.0)
        assert repr(permit).startswith(f"<redlock.asyncio.Permit {permit.id[:8]}... of 'bad'")
        with pytest.raises(TypeError, match="Permit"):
            permit.try_lock()
        # Released when the client closes.
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix) as after:
        assert await after.get_semaphore("bad", 2).available_permits() == 2
    with pytest.raises(ValueError, match="closed"):
        client.get_semaphore("bad", 2)
