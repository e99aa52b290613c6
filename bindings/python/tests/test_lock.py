"""Acquiring, refusing, expiring, extending and releasing locks."""

import re
import threading
import time

import pytest

import redlock
from conftest import on_every_node, redis_cli


def test_lock_stores_token_on_every_node_and_unlock_deletes_it(client, nodes, prefix):
    lock = client.get_lock("job")
    assert lock.names == ("job",)
    assert lock.try_lock(lease=10.0)
    assert re.fullmatch(r"[0-9a-f]{32}", lock.token)
    assert on_every_node(nodes, "GET", prefix + "job") == [lock.token] * 5
    assert 9.0 < lock.validity <= 10.0
    assert lock.is_held() and lock.locked()

    lock.unlock()
    assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5
    assert lock.validity <= 0
    assert lock.token is None
    assert not lock.is_held() and not lock.locked()


def test_every_acquisition_has_a_new_token(client):
    lock = client.get_lock("job")
    tokens = set()
    for _ in range(3):
        assert lock.try_lock()
        tokens.add(lock.token)
        lock.unlock()
    assert len(tokens) == 3


def test_lock_over_unix_sockets(nodes, prefix):
    with redlock.Redlock(nodes.sockets, key_prefix=prefix) as client:
        lock = client.get_lock("job")
        assert lock.try_lock()
        assert on_every_node(nodes, "GET", prefix + "job") == [lock.token] * 5
        lock.unlock()


def test_second_client_is_refused_until_release(client, other):
    mine = client.get_lock("job")
    theirs = other.get_lock("job")
    assert mine.try_lock()
    assert not theirs.try_lock()
    started = time.monotonic()
    assert not theirs.try_lock(wait=0.3)
    assert time.monotonic() - started >= 0.25
    assert not theirs.is_held()

    mine.unlock()
    assert theirs.try_lock()
    theirs.unlock()


def test_waiting_acquires_once_the_holder_releases(client, other):
    mine = client.get_lock("job")
    assert mine.try_lock()
    releaser = threading.Timer(0.3, mine.unlock)
    releaser.start()
    try:
        assert other.get_lock("job").try_lock(wait=10.0)
    finally:
        releaser.join()


def test_lock_expires_at_the_end_of_its_lease(client, other):
    mine = client.get_lock("job")
    assert mine.try_lock(lease=0.2)
    assert mine.locked()
    time.sleep(0.4)
    assert mine.validity <= 0
    assert not mine.locked() and not mine.is_held()

    assert other.get_lock("job").try_lock()
    with pytest.raises(redlock.LockNotHeld):
        mine.extend(5.0)
    with pytest.raises(redlock.LockNotHeld):
        mine.unlock()


def test_extend_renews_the_lease(client, other, nodes, prefix):
    lock = client.get_lock("job")
    assert lock.try_lock(lease=0.5)
    lock.extend(5.0)
    assert lock.validity > 4.0
    assert all(int(ttl) > 4000 for ttl in on_every_node(nodes, "PTTL", prefix + "job"))
    time.sleep(0.7)
    assert lock.is_held()
    assert not other.get_lock("job").try_lock()

    lock.unlock()
    with pytest.raises(redlock.LockNotHeld):
        lock.extend(5.0)


def test_multi_lock_is_all_or_nothing(client, other, nodes, prefix):
    blocker = other.get_lock("b")
    assert blocker.try_lock()
    multi = client.get_multi_lock("a", "b", "c")
    assert multi.names == ("a", "b", "c")
    assert not multi.try_lock()
    assert on_every_node(nodes, "EXISTS", prefix + "a", prefix + "c") == ["0"] * 5

    blocker.unlock()
    assert multi.try_lock(lease=5.0)
    for name in "abc":
        assert on_every_node(nodes, "GET", prefix + name) == [multi.token] * 5
    assert not other.get_lock("c").try_lock()
    multi.extend(10.0)
    assert multi.validity > 9.0

    multi.unlock()
    assert on_every_node(nodes, "EXISTS", prefix + "a", prefix + "b", prefix + "c") == ["0"] * 5


def test_with_lock_holds_inside_and_releases_after(client, nodes, prefix):
    lock = client.get_lock("job")
    with lock as entered:
        assert entered is lock
        assert lock.locked()
        assert 29.0 < lock.validity <= redlock.DEFAULT_LEASE
    assert not lock.locked()
    assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5


def test_client_lock_context_manager(client, other):
    with client.lock("job", lease=5.0) as lock:
        assert lock.locked()
        assert 4.0 < lock.validity <= 5.0
        with pytest.raises(redlock.LockNotAcquired) as refused:
            with other.lock("job", wait=0.2):
                pytest.fail("entered a lock held by someone else")
        assert refused.value.code == redlock.capi.REDLOCK_ELOCKED
        assert "job" in str(refused.value)
    assert not lock.locked()
    assert other.get_lock("job").try_lock()


def test_leaving_a_lost_lock_raises_lock_not_held(client, other):
    with pytest.raises(redlock.LockNotHeld):
        with client.lock("job", lease=0.2):
            time.sleep(0.4)
            assert other.get_lock("job").try_lock()


def test_an_error_in_the_block_goes_on_and_the_lock_is_released(client, other):
    with pytest.raises(KeyError):
        with client.lock("job", lease=5.0):
            raise KeyError("boom")
    assert other.get_lock("job").try_lock()

    lock = client.get_lock("other")
    with pytest.raises(KeyError):
        with lock:
            raise KeyError("boom")
    assert not lock.locked()
    assert other.get_lock("other").try_lock()


def test_threading_lock_api(client, other):
    lock = client.get_lock("job")
    theirs = other.get_lock("job")
    assert lock.acquire(blocking=False)
    assert lock.locked()
    assert not theirs.acquire(blocking=False)
    started = time.monotonic()
    assert not theirs.acquire(timeout=0.3)
    assert time.monotonic() - started >= 0.25
    with pytest.raises(ValueError):
        theirs.acquire(False, 1.0)

    lock.release()
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        lock.release()
    assert theirs.acquire()
    theirs.release()


def test_blocking_acquire_waits_for_the_release(client, other):
    mine = client.get_lock("job")
    assert mine.acquire()
    releaser = threading.Timer(0.3, mine.release)
    releaser.start()
    try:
        theirs = other.get_lock("job")
        assert theirs.acquire()
        assert theirs.locked()
        theirs.release()
    finally:
        releaser.join()


def test_threads_sharing_one_lock_object_exclude_each_other(nodes, prefix):
    with redlock.Redlock(nodes.uris, key_prefix=prefix, retry_delay_ms=10,
                         retry_jitter_ms=5) as client:
        lock = client.get_lock("job")
        inside = []
        overlaps = []

        def work():
            for _ in range(5):
                with lock:
                    inside.append(1)
                    if len(inside) > 1:
                        overlaps.append(1)
                    time.sleep(0.005)
                    inside.pop()

        threads = [threading.Thread(target=work) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert overlaps == []
        assert not lock.locked()


def test_a_quorum_is_enough(nodes, prefix, missing_sockets):
    # A group never met (its own prefix) with a node missing: the young
    # servers would wait max_lease_ms under restart_records (docs/topology.md).
    with redlock.Redlock(nodes.uris[:4] + missing_sockets[:1], key_prefix=prefix,
                         restart_records=0) as client:
        lock = client.get_lock("job")
        assert lock.try_lock()
        assert redis_cli(nodes.uris[0], "GET", prefix + "job") == lock.token
        lock.unlock()


def test_too_few_nodes_is_no_quorum(nodes, prefix, missing_sockets):
    with redlock.Redlock(nodes.uris[:2] + missing_sockets, key_prefix=prefix) as client:
        lock = client.get_lock("job")
        started = time.monotonic()
        with pytest.raises(redlock.NoQuorum):
            lock.try_lock()
        # One node deadline (connect 100 ms), with slack for a busy machine.
        assert time.monotonic() - started < 2.0
        with pytest.raises(redlock.NoQuorum) as failed:
            with client.lock("job"):
                pytest.fail("entered without a quorum")
        assert failed.value.code == redlock.capi.REDLOCK_ENOQUORUM
        assert "missing0.sock" in str(failed.value)
        assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5


def test_ctrl_c_ends_a_long_wait_and_leaves_no_key(client, other, nodes, prefix):
    """SIGINT during a wait runs the handler at once (KeyboardInterrupt); the
    attempt under way is released."""
    import os
    import signal
    import threading

    held = other.get_lock("sigint")
    assert held.try_lock(lease=30.0)
    waiting = client.get_lock("sigint")
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        waiting.try_lock(wait=60.0, lease=30.0)
    timer.join()
    assert time.monotonic() - started < 30.0
    assert not waiting.is_held()
    assert on_every_node(nodes, "GET", prefix + "sigint") == [held.token] * len(nodes.uris)
    held.unlock()


def test_the_client_works_in_a_forked_child_and_in_its_parent(client, prefix):
    """After fork() parent and child share no connection: both lock at once."""
    import os

    warm = client.get_lock("fork-warm")
    assert warm.try_lock(lease=10.0)
    warm.unlock()
    pid = os.fork()
    name = "fork-child" if pid == 0 else "fork-parent"
    failures = 0
    for _ in range(200):
        lock = client.get_lock(name)
        try:
            if lock.try_lock(lease=10.0):
                lock.unlock()
            else:
                failures += 1
        except redlock.LockError:
            failures += 1
    if pid == 0:
        os._exit(0 if failures == 0 else 1)
    _, status = os.waitpid(pid, 0)
    assert failures == 0
    assert os.waitstatus_to_exitcode(status) == 0


def test_options_read_back(client, prefix):
    assert client.get_option("key_prefix") == prefix
    with pytest.raises(redlock.InvalidArgument):
        client.get_option("no_such_option")


def test_an_outage_ends_a_wait_with_no_quorum_and_contention_does_not(nodes, prefix,
                                                                      missing_sockets):
    # Every node missing: the wait as long as it takes ends after
    # unavailable_timeout_ms, with the reason.
    with redlock.Redlock(missing_sockets, key_prefix=prefix,
                         unavailable_timeout_ms=300, retry_delay_ms=50) as client:
        started = time.monotonic()
        with pytest.raises(redlock.NoQuorum) as failed:
            with client.get_lock("job"):
                pytest.fail("entered without a quorum")
        # The library counts whole milliseconds: 300 of them may be 299.x.
        assert 0.299 <= time.monotonic() - started < 5.0
        assert "unavailable_timeout_ms" in str(failed.value)
        with pytest.raises(redlock.NoQuorum):
            client.get_lock("job").acquire()
    # Held elsewhere for longer than unavailable_timeout_ms: still waited for.
    with redlock.Redlock(nodes.uris, key_prefix=prefix, unavailable_timeout_ms=300,
                         retry_delay_ms=50) as client, \
            redlock.Redlock(nodes.uris, key_prefix=prefix) as other:
        assert other.get_lock("job").try_lock(lease=1.0)
        lock = client.get_lock("job")
        assert lock.acquire()
        lock.unlock()
