"""The GIL while waiting, releasing on collection, and memory over many cycles."""

import gc
import os
import subprocess
import sys
import threading
import time
import tracemalloc

import redlock
from conftest import on_every_node


def test_other_threads_run_while_a_lock_call_waits(client, other):
    held = client.get_lock("job")
    assert held.try_lock()
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        started = time.monotonic()
        assert not other.get_lock("job").try_lock(wait=1.0)
        ended = time.monotonic()
    finally:
        stop.set()
        counter.join()
    # Had the call kept the GIL, the counter could not have ticked in the
    # middle of it at all.
    middle = [t for t in ticks if started + 0.2 < t < ended - 0.2]
    assert len(middle) >= 10


def test_a_collected_lock_is_released(client, other, nodes, prefix):
    lock = client.get_lock("job")
    assert lock.try_lock()
    del lock
    gc.collect()
    assert on_every_node(nodes, "EXISTS", prefix + "job") == ["0"] * 5
    assert other.get_lock("job").try_lock()


def test_a_collected_client_releases_its_locks(nodes, prefix, other):
    client = redlock.Redlock(nodes.uris, key_prefix=prefix)
    lock = client.get_multi_lock("a", "b")
    assert lock.try_lock()
    del client, lock
    gc.collect()
    assert on_every_node(nodes, "EXISTS", prefix + "a", prefix + "b") == ["0"] * 5
    assert other.get_multi_lock("a", "b").try_lock()


def test_a_collected_lock_in_a_reference_cycle_is_released(client, other):
    lock = client.get_lock("job")
    assert lock.try_lock()
    lock.cycle = lock
    del lock
    gc.collect()
    assert other.get_lock("job").try_lock()


# A client left open at exit, holding a kept lock, a lock with a lease and
# one held by a Lock in a global; a thread's client, in the middle of a
# wait for a lock held elsewhere.
AT_EXIT = """
import sys, threading, time
import redlock
uris = sys.argv[1].split(",")
client = redlock.Redlock(uris, key_prefix=sys.argv[2])
kept = client.get_lock("kept")
assert kept.try_lock()
leased = client.get_lock("leased")
assert leased.try_lock(lease=60)
waiter = redlock.Redlock(uris, key_prefix=sys.argv[2])
def wait():
    try:
        waiter.get_lock("leased").try_lock(wait=60)
    except redlock.ClientClosed:  # the exit closed the client
        pass
threading.Thread(target=wait, daemon=True).start()
time.sleep(0.2)
print("held")
"""


def test_locks_left_held_at_exit_are_released(nodes, prefix, other):
    done = subprocess.run([sys.executable, "-c", AT_EXIT, ",".join(nodes.uris), prefix],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "held\n" and done.stderr == ""
    assert on_every_node(nodes, "EXISTS", prefix + "kept", prefix + "leased") == ["0"] * 5
    assert other.get_lock("leased").try_lock()


def test_a_lock_outliving_its_client_object_keeps_it(nodes, prefix, other):
    client = redlock.Redlock(nodes.uris, key_prefix=prefix)
    lock = client.get_lock("job")
    assert lock.try_lock()
    del client
    gc.collect()
    assert not other.get_lock("job").try_lock()
    lock.unlock()
    assert other.get_lock("job").try_lock()


def _rss_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_leak_over_many_cycles(client, other):
    lock = client.get_lock("job")
    taken = other.get_lock("job")

    def cycles(n):
        for i in range(n):
            assert lock.try_lock()
            assert lock.validity > 0 and lock.token
            if i % 10 == 0:
                lock.extend(10.0)
                assert not taken.try_lock()
                client.get_lock("idle")
            lock.unlock()

    cycles(2000)
    gc.collect()
    tracemalloc.start()
    rss_before = _rss_bytes()
    traced_before = tracemalloc.get_traced_memory()[0]
    cycles(20000)
    gc.collect()
    traced_growth = tracemalloc.get_traced_memory()[0] - traced_before
    rss_growth = _rss_bytes() - rss_before
    tracemalloc.stop()
    # A leaked handle, token or exception per cycle would be megabytes here.
    assert traced_growth < 64 * 1024
    assert rss_growth < 2 * 1024 * 1024
