"""client.get_rlock(): reentrant per thread, like threading.RLock, across
every get_rlock() of the same name from one client."""

import threading

import pytest

import redlock
from conftest import on_every_node


def test_the_holding_thread_reenters_and_the_last_release_unlocks(client, other, nodes, prefix):
    first, second = client.get_rlock("job"), client.get_rlock("job")
    assert first.acquire()
    token = first.lock.token
    assert second.try_lock() and second.get_hold_count() == 2
    with first:
        assert first.get_hold_count() == 3
    assert not other.get_lock("job").try_lock(lease=5.0)
    first.release()
    assert first.is_held_by_current_thread()
    assert on_every_node(nodes, "GET", prefix + "job") == [token] * 5
    second.release()
    assert first.get_hold_count() == 0 and not second.is_held_by_current_thread()
    assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5
    with pytest.raises(RuntimeError):
        first.release()


def test_other_threads_wait_for_the_holder(client, nodes, prefix):
    rlock = client.get_rlock("job")
    assert rlock.acquire()
    seen = []

    def contend() -> None:
        mine = client.get_rlock("job")
        seen.append(mine.try_lock(wait=0))
        with pytest.raises(RuntimeError):
            mine.release()
        seen.append(mine.acquire(timeout=5.0))
        seen.append(mine.get_hold_count())
        mine.release()

    thread = threading.Thread(target=contend)
    thread.start()
    while len(seen) < 1:
        thread.join(0.01)
    rlock.release()
    thread.join()
    assert seen == [False, True, 1]
    assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5


def test_bad_names_are_refused(client):
    with pytest.raises(TypeError):
        client.get_rlock(5)
    assert isinstance(client.get_rlock("x"), redlock.RLock)
