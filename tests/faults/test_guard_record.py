"""The guard's record (scripts/guard.lua) in a neighbour's hands: a user with
write access to the keys forges it, garbles it or deletes it. Whatever it
says, a node is held back for no longer than max_lease_ms from when a client
first read it, and a client that acts on a guard reads the record again (at
most once a second), so that a record deleted or corrected holds no one back
any more."""

import re
import time

import redlock
from assertions import expect_failure

GUARD_KEY = "redlock:guard"
MAX_LEASE_MS = 3000
# About 285,000 years ahead of any clock.
FAR = 9000000000000000


def server_ms(nodes, i):
    seconds, micros = nodes.cli(i, "TIME").split()
    return int(seconds) * 1000 + int(micros) // 1000


def forge(nodes, indexes, record=None):
    """Writes a guard record on the nodes given: by default one that names
    the server itself and ends FAR ahead."""
    for i in indexes:
        value = record if record is not None else f"{nodes.run_id(i)} 999999 {FAR}"
        assert nodes.cli(i, "SET", GUARD_KEY, value) == "OK"


def refused_for_ms(client, name):
    detail = expect_failure(client, name, redlock.NoQuorum, lease=1.0)
    lefts = [int(ms) for ms in re.findall(r"not counted for (\d+) ms more \(restart_guard\)",
                                         detail)]
    assert lefts, detail
    return lefts


def test_a_forged_record_holds_a_node_back_for_max_lease_at_most(nodes, make_client):
    forge(nodes, (0, 1, 2))
    client = make_client(nodes.uris, max_lease_ms=MAX_LEASE_MS)
    lefts = refused_for_ms(client, "forged")
    assert len(lefts) == 3 and all(0 < left <= MAX_LEASE_MS for left in lefts), lefts
    for h in client.health()[:3]:
        assert h["state"] == "guarded" and 0 < h["guard_ms"] <= MAX_LEASE_MS, h
    # The record itself now ends within max_lease_ms of the server's clock,
    # for every client that reads it later.
    for i in (0, 1, 2):
        run_id, epoch, until = nodes.get(i, GUARD_KEY).split()
        assert run_id == nodes.run_id(i) and epoch == "999999"
        assert 0 < int(until) - server_ms(nodes, i) <= MAX_LEASE_MS
    late = make_client(nodes.uris, max_lease_ms=MAX_LEASE_MS)
    assert all(0 < left <= MAX_LEASE_MS for left in refused_for_ms(late, "forged"))
    # And it ends: a wait longer than the guard takes the lock.
    lock = client.get_lock("forged")
    assert lock.try_lock(lease=1.0, wait=MAX_LEASE_MS / 1000 + 3.0)
    lock.unlock()


def test_a_garbled_record_is_a_guard_of_max_lease(nodes, make_client):
    forge(nodes, (0, 1, 2), record="not a record")
    client = make_client(nodes.uris, max_lease_ms=MAX_LEASE_MS)
    lefts = refused_for_ms(client, "garbled")
    assert len(lefts) == 3 and all(0 < left <= MAX_LEASE_MS for left in lefts), lefts
    # Rewritten as the server's own record, ending max_lease_ms ahead.
    for i in (0, 1, 2):
        run_id, _, until = nodes.get(i, GUARD_KEY).split()
        assert run_id == nodes.run_id(i)
        assert 0 < int(until) - server_ms(nodes, i) <= MAX_LEASE_MS


def test_a_deleted_record_holds_no_one_back(nodes, make_client):
    long_lease_ms = 60000
    forge(nodes, (0, 1, 2))
    client = make_client(nodes.uris, max_lease_ms=long_lease_ms)
    assert all(left > long_lease_ms - 5000 for left in refused_for_ms(client, "deleted"))
    for i in (0, 1, 2):
        assert nodes.cli(i, "DEL", GUARD_KEY) == "1"
    # The guard is read again before the next tries: the lock is taken
    # long before the minute the client read first.
    started = time.monotonic()
    lock = client.get_lock("deleted")
    assert lock.try_lock(lease=1.0, wait=10.0)
    assert time.monotonic() - started < 10.0
    lock.unlock()
    assert all(h["state"] == "up" for h in client.health())
