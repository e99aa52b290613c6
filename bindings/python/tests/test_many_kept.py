"""Many kept locks at once, on the sync client (the C library's renewal
thread) and on redlock.asyncio (its renewer on the loop): a few thousand
locks kept through several renewal waves with none lost and no renewal
failed, and each lock's verdict its own when nodes refuse it."""

import asyncio
import logging
import time
from typing import List

import pytest
from conftest import redis_cli

import redlock
import redlock.asyncio as aredlock

N_LOCKS = 3000
KEPT_MS = 3000   # renewed about every 0.9 s
HOLD_S = 4.0


class Failures(logging.Handler):
    """The renewal_failed and lost events the library logs."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "renewal_failed" in text or "lost" in text:
            self.records.append(text)


@pytest.fixture
def failures():
    handler = Failures()
    logger = logging.getLogger("redlock")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.WARNING)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old)


def refused(failures) -> list:
    """The failures other than a node deadline missed: a renewal a slow
    machine made late is retried, and the locks' validity (on_time) and loss
    say whether that mattered."""
    return [text for text in failures.records if "no answer within" not in text]


def on_time(locks) -> bool:
    """Whether every lock was renewed on time: each is due a third of the
    lease after its last renewal, so its validity stays above half the lease
    unless a renewal came more than a sixth of the lease late."""
    least = min(lock.validity for lock in locks)
    return least > KEPT_MS / 2000 or pytest.fail(f"a lock's validity fell to {least:.3f} s")


def refuse(nodes, prefix: str, name: str, how_many: int) -> None:
    """Deletes a lock's key on the first how_many nodes, by hand."""
    for uri in nodes.uris[:how_many]:
        redis_cli(uri, "DEL", prefix + name)


def test_sync_client_keeps_thousands_of_locks(nodes, prefix, failures):
    with redlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS) as client:
        locks = [client.get_lock(f"k{i}") for i in range(N_LOCKS)]
        for lock in locks:
            assert lock.try_lock()
        end = time.monotonic() + HOLD_S
        while time.monotonic() < end:
            time.sleep(0.25)
            assert not any(lock.lost for lock in locks), failures.records[:3]
            assert on_time(locks)
        assert refused(failures) == []
        # 5 nodes: refused by two, a lock holds; refused by three, it is lost.
        refuse(nodes, prefix, "k7", 2)
        refuse(nodes, prefix, "k8", 3)
        time.sleep(2 * KEPT_MS / 3000 + 0.2)
        lost = [i for i, lock in enumerate(locks) if lock.lost]
        assert lost == [8]
        assert locks[7].validity > 0
        assert all("renewal_failed" not in text for text in refused(failures))
        for i, lock in enumerate(locks):
            if i == 8:
                with pytest.raises(redlock.LockNotHeld):
                    lock.unlock()
            else:
                lock.unlock()


@pytest.mark.asyncio
async def test_asyncio_client_keeps_thousands_of_locks(nodes, prefix, failures):
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix,
                                watchdog_lease_ms=KEPT_MS) as client:
        locks = [client.get_lock(f"k{i}") for i in range(N_LOCKS)]
        for lock in locks:
            assert await lock.try_lock()
        lost_told: List[str] = []
        for lock in locks:
            lock.on_lost(lambda lost_lock, error: lost_told.append(lost_lock.names[0]))
        end = time.monotonic() + HOLD_S
        while time.monotonic() < end:
            await asyncio.sleep(0.25)
            assert not any(lock.lost for lock in locks), failures.records[:3]
            assert on_time(locks)
        assert refused(failures) == []
        refuse(nodes, prefix, "k7", 2)
        refuse(nodes, prefix, "k8", 3)
        await asyncio.sleep(2 * KEPT_MS / 3000 + 0.2)
        assert [i for i, lock in enumerate(locks) if lock.lost] == [8]
        assert lost_told == ["k8"]
        assert locks[7].validity > 0
        assert all("renewal_failed" not in text for text in refused(failures))
        for i, lock in enumerate(locks):
            if i == 8:
                with pytest.raises(redlock.LockNotHeld):
                    await lock.unlock()
            else:
                await lock.unlock()
