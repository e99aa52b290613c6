"""Memory growth of the Python binding over many lock/unlock cycles.

After a warm-up, runs CYCLES cycles (each: try_lock, unlock; every tenth also
an extend, a refused try_lock, and a multi-lock) against three local nodes,
then checks that neither the Python heap (tracemalloc) nor the process
(resident set size: the C core's allocations included) grew by more than a
bound that one leaked object per cycle would exceed.

Usage: python3 python_growth.py REDIS_NODES_SH [CYCLES]
"""

import gc
import os
import subprocess
import sys
import tempfile
import tracemalloc

import redlock

WARM_UP = 10_000
MAX_RSS_GROWTH = 5 * 1024 * 1024      # 50 bytes a cycle over 100k cycles
MAX_HEAP_GROWTH = 1 * 1024 * 1024     # 10 bytes a cycle


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cycle(client: redlock.Redlock, rival: redlock.Redlock, i: int) -> None:
    lock = client.get_lock("mem-growth")
    if not lock.try_lock(lease=10.0):
        raise AssertionError("the lock was refused: " + repr(lock))
    if i % 10 == 0:
        lock.extend(10.0)
        if rival.get_lock("mem-growth").try_lock(lease=10.0):
            raise AssertionError("the rival took a held lock")
        multi = client.get_multi_lock("mem-a", "mem-b", "mem-c")
        if not multi.try_lock(lease=10.0):
            raise AssertionError("the multi-lock was refused")
        multi.unlock()
    lock.unlock()


def main() -> int:
    nodes_sh = sys.argv[1]
    cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    with tempfile.TemporaryDirectory() as work:
        uris = subprocess.run([nodes_sh, "start", work, "3"], check=True,
                              capture_output=True, text=True).stdout.split()
        try:
            options = {"node_timeout_ms": 2000, "connect_timeout_ms": 2000}
            with redlock.Redlock(uris, **options) as client, \
                    redlock.Redlock(uris, **options) as rival:
                for i in range(WARM_UP):
                    cycle(client, rival, i)
                gc.collect()
                tracemalloc.start()
                heap_before = tracemalloc.get_traced_memory()[0]
                rss_before = rss_bytes()
                for i in range(cycles):
                    cycle(client, rival, i)
                gc.collect()
                heap_growth = tracemalloc.get_traced_memory()[0] - heap_before
                rss_growth = rss_bytes() - rss_before
                tracemalloc.stop()
        finally:
            subprocess.run([nodes_sh, "stop", work], check=True, capture_output=True)

    print(f"{cycles} cycles after {WARM_UP} to warm up: Python heap grew by "
          f"{heap_growth} bytes, resident set by {rss_growth} bytes")
    if heap_growth > MAX_HEAP_GROWTH:
        print(f"FAIL: the Python heap grew by more than {MAX_HEAP_GROWTH} bytes")
        return 1
    if rss_growth > MAX_RSS_GROWTH:
        print(f"FAIL: the resident set grew by more than {MAX_RSS_GROWTH} bytes")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
