"""Fencing tokens stopping a holder that was paused past its lease.

    python3 examples/fencing.py redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
    (or with the nodes in REDLOCK_NODES, comma separated)

A lock alone cannot stop this: the first holder takes the lock, writes, and
is then stopped (SIGSTOP: a long GC pause, a swapped-out VM) for longer than
its lease. The lock expires, a second holder takes it and writes. When the
first holder wakes up it still believes it holds the lock and writes again.

The store below takes a fence with every write and refuses a write whose
fence is smaller than the largest it has accepted (a SQLite table with the
fence beside the value, checked in the same UPDATE). The first holder's late
write is refused; the second holder's went through. Exits 0 when that is what
happened.
"""

import os
import signal
import sqlite3
import sys
import tempfile
import time

import redlock

LEASE = 1.0        # seconds: the first holder sleeps through it


class FencedStore:
    """A value per resource, with the fence of the write that set it."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("CREATE TABLE IF NOT EXISTS ledger "
                        "(resource TEXT PRIMARY KEY, fence INTEGER NOT NULL, value TEXT)")

    def write(self, resource, fence, value):
        """Stores value unless a write with a larger fence came first."""
        self.db.execute("INSERT OR IGNORE INTO ledger VALUES (?, 0, NULL)", (resource,))
        done = self.db.execute("UPDATE ledger SET fence = ?, value = ? "
                               "WHERE resource = ? AND fence <= ?",
                               (fence, value, resource, fence))
        return done.rowcount == 1

    def read(self, resource):
        return self.db.execute("SELECT fence, value FROM ledger WHERE resource = ?",
                               (resource,)).fetchone()


def first_holder(nodes, path, report):
    """Takes the lock, writes, is stopped past its lease, then writes again."""
    client = redlock.Redlock(nodes, fencing=1)
    lock = client.get_lock("ledger")
    assert lock.try_lock(lease=LEASE)
    store = FencedStore(path)
    fence = lock.fence
    os.write(report, f"{fence} {store.write('ledger', fence, 'first')}\n".encode())
    os.kill(os.getpid(), signal.SIGSTOP)          # the pause
    late = store.write("ledger", fence, "first, late")
    os.write(report, f"{late}\n".encode())
    os._exit(0)


def main():
    nodes = sys.argv[1:] or redlock.split_nodes(os.environ.get("REDLOCK_NODES", ""))
    if not nodes or not nodes[0]:
        sys.exit("give the nodes as arguments or in REDLOCK_NODES")
    path = os.path.join(tempfile.mkdtemp(), "ledger.db")
    FencedStore(path)
    reads, writes = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reads)
        first_holder(nodes, path, writes)
    os.close(writes)
    report = os.fdopen(reads)
    first_fence, accepted = report.readline().split()
    print(f"first holder:  fence {first_fence}, write accepted: {accepted}")
    os.waitpid(child, os.WUNTRACED)               # stopped, still "holding" the lock
    with redlock.Redlock(nodes, fencing=1) as client:
        lock = client.get_lock("ledger")
        assert lock.try_lock(wait=LEASE * 3, lease=10)   # once the first lease ran out
        store = FencedStore(path)
        second = store.write("ledger", lock.fence, "second")
        print(f"second holder: fence {lock.fence}, write accepted: {second}")
        os.kill(child, signal.SIGCONT)            # the first holder wakes up
        late = report.readline().strip() == "True"
        os.waitpid(child, 0)
        print(f"first holder, after its pause: write accepted: {late}")
        fence, value = store.read("ledger")
        print(f"the store has {value!r} with fence {fence}")
        lock.unlock()
    ok = accepted == "True" and second and not late and value == "second"
    print("the late write was refused" if ok else "UNEXPECTED: see above")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
