"""Kept locks: taken without a lease, renewed by the client until released,
and reported lost when renewal fails for good."""

import sys
import threading
import time
from typing import Iterator, List, Tuple

import pytest

import redlock
from conftest import Nodes, on_every_node, redis_cli

# Short enough for the tests to outlive several leases; renewed every 300 ms.
KEPT_MS = 900


@pytest.fixture
def keeper(nodes: Nodes, prefix: str) -> Iterator[redlock.Redlock]:
    with redlock.Redlock(nodes.uris, key_prefix=prefix, watchdog_lease_ms=KEPT_MS,
                         node_timeout_ms=100) as c:
        yield c


def test_a_lock_without_lease_outlives_its_lease_until_released(keeper, other, nodes, prefix):
    lock = keeper.get_lock("job")
    assert lock.try_lock()
    assert KEPT_MS / 1000 - 0.2 < lock.validity <= KEPT_MS / 1000
    theirs = other.get_lock("job")
    end = time.monotonic() + 3 * KEPT_MS / 1000
    while time.monotonic() < end:
        assert not theirs.try_lock(lease=5.0)
        assert lock.validity > 0 and not lock.lost
        time.sleep(0.1)
    lock.unlock()
    assert theirs.try_lock(lease=5.0)
    theirs.unlock()


def test_no_renewal_follows_unlock(keeper, nodes, prefix):
    lock = keeper.get_lock("job")
    assert lock.try_lock()
    time.sleep(KEPT_MS / 1000)
    lock.unlock()
    for _ in range(2 * KEPT_MS // 100):
        assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5
        time.sleep(0.1)


def test_acquire_and_with_keep_the_lock(keeper, nodes, prefix):
    lock = keeper.get_lock("job")
    with lock:
        time.sleep(2 * KEPT_MS / 1000)
        assert lock.validity > 0
        assert on_every_node(nodes, "EXISTS", prefix + "job") == ["1"] * 5
    with keeper.lock("other") as other_lock:
        time.sleep(2 * KEPT_MS / 1000)
        assert other_lock.validity > 0
    assert on_every_node(nodes, "EXISTS", prefix + "other") == ["0"] * 5


def test_a_multi_lock_is_kept(keeper, nodes, prefix):
    lock = keeper.get_multi_lock("a", "b")
    assert lock.try_lock()
    time.sleep(2 * KEPT_MS / 1000)
    assert on_every_node(nodes, "EXISTS", prefix + "a", prefix + "b") == ["2"] * 5
    lock.unlock()


def test_an_explicit_lease_is_not_renewed(keeper, other):
    lock = keeper.get_lock("job")
    assert lock.try_lock(lease=0.5)
    assert other.get_lock("job").try_lock(wait=2.0, lease=5.0)
    # Not renewed, it ran out while held: lost (its keys can have expired),
    # and it stays lost once released.
    assert lock.validity <= 0 and lock.lost
    with pytest.raises(redlock.LockNotHeld):
        lock.unlock()
    assert lock.lost


def test_losing_a_majority_reports_the_lock_lost_before_anyone_else_has_it(
        keeper, other, nodes):
    lock = keeper.get_lock("job")
    told: List[Tuple[float, redlock.LockError]] = []
    lock.on_lost(lambda lost_lock, error: told.append((time.monotonic(), error)))
    assert lock.try_lock()

    # The other client tries all along; it may only succeed after the loss.
    taken: List[float] = []
    stop = threading.Event()

    def contend() -> None:
        theirs = other.get_lock("job")
        while not stop.is_set():
            try:
                if theirs.try_lock(lease=5.0):
                    taken.append(time.monotonic())
                    theirs.unlock()
                    return
            except redlock.NoQuorum:
                pass
            time.sleep(0.02)

    contender = threading.Thread(target=contend)
    contender.start()
    paused = nodes.uris[:3]
    deadline = 0.0
    try:
        for uri in paused:
            redis_cli(uri, "CLIENT", "PAUSE", "3000", "ALL")
        # The end of validity is that of the last extension that succeeded:
        # one under way as the nodes paused may still land, so it is watched.
        end = time.monotonic() + 5
        while not told and time.monotonic() < end:
            deadline = max(deadline, time.monotonic() + lock.validity)
            time.sleep(0.002)
    finally:
        for uri in paused:
            redis_cli(uri, "CLIENT", "UNPAUSE")
        contender.join(10)
        stop.set()
        contender.join()

    assert told, "the loss was never reported"
    when, error = told[0]
    assert len(told) == 1
    assert isinstance(error, (redlock.LockNotHeld, redlock.LockExpired))
    assert when <= deadline + 0.1
    assert lock.lost and lock.validity <= 0
    assert taken and taken[0] > when
    with pytest.raises(redlock.LockNotHeld):
        lock.unlock()
    assert lock.lost
    # A fresh acquisition is not lost, and an on_lost given late runs at once
    # only for a lost one.
    assert lock.try_lock(wait=2.0)
    assert not lock.lost
    late: List[redlock.LockError] = []
    lock.on_lost(lambda lost_lock, error: late.append(error))
    assert late == []
    lock.unlock()


def test_on_lost_given_after_the_loss_runs_at_once(keeper, nodes):
    lock = keeper.get_lock("job")
    assert lock.try_lock()
    try:
        for uri in nodes.uris[:3]:
            redis_cli(uri, "CLIENT", "PAUSE", "2000", "ALL")
        end = time.monotonic() + 2 * KEPT_MS / 1000
        while not lock.lost and time.monotonic() < end:
            time.sleep(0.01)
        assert lock.lost
        late: List[redlock.LockError] = []
        lock.on_lost(lambda lost_lock, error: late.append(error))
        assert len(late) == 1 and isinstance(late[0], redlock.LockError)
    finally:
        for uri in nodes.uris[:3]:
            redis_cli(uri, "CLIENT", "UNPAUSE")


def test_a_failing_callback_stops_neither_the_others_nor_renewal(keeper, nodes, monkeypatch):
    reported: List[BaseException] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda args: reported.append(args.exc_value))
    lock = keeper.get_lock("job")
    kept = keeper.get_lock("kept")
    seen: List[str] = []

    def fails(lost_lock: redlock.Lock, error: redlock.LockError) -> None:
        raise RuntimeError("a callback that fails")

    lock.on_lost(fails)
    lock.on_lost(lambda lost_lock, error: seen.append("second"))
    assert lock.try_lock()
    assert kept.try_lock()
    # Lose only `lock`: its key is taken over on a majority of the nodes.
    for uri in nodes.uris[:3]:
        assert redis_cli(uri, "SET", f"{keeper.get_option('key_prefix')}job", "someone") == "OK"
    end = time.monotonic() + 2 * KEPT_MS / 1000
    while not seen and time.monotonic() < end:
        time.sleep(0.01)
    assert seen == ["second"]
    assert lock.lost
    # The failure is reported as Python reports exceptions nobody can catch.
    end = time.monotonic() + 1
    while not reported and time.monotonic() < end:
        time.sleep(0.01)
    assert [str(exc) for exc in reported] == ["a callback that fails"]
    time.sleep(2 * KEPT_MS / 1000)
    assert kept.validity > 0 and not kept.lost
    kept.unlock()
