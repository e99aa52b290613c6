"""Scenario 4: a node restarts without persistence while a lock is held.

The holder's key is on nodes 2, 3 and 4 (nodes 0 and 1 were down when it
acquired, and came back empty). Node 2 then crashes and restarts empty: only
nodes 3 and 4 still hold the key, and nodes 0, 1 and 2 would grant it to
anyone, a quorum. The restart guard (option restart_guard, on by default)
notices node 2's new run_id on the next connection and does not count its
votes until the largest lease the client has used has passed."""

import re
import time

import pytest

import redlock
from assertions import expect_failure

LEASE = 4.0


@pytest.fixture(params=["kill-9", "shutdown-nosave"])
def crash(request, nodes):
    def crash_and_restart(i):
        if request.param == "kill-9":
            nodes.kill_node(i)
        else:
            nodes.shutdown_nosave(i)
        nodes.start_node(i)
    return crash_and_restart


def hold_on_a_bare_quorum(nodes, make_client):
    """A lock held on nodes 2, 3 and 4 only."""
    holder = make_client(nodes.uris).get_lock("crash")
    nodes.stop_node(0)
    nodes.stop_node(1)
    assert holder.try_lock(lease=LEASE)
    nodes.start_node(0)
    nodes.start_node(1)
    assert nodes.holders("crash", holder.token) == [2, 3, 4]
    return holder


def warm_up(nodes, client):
    """Takes and releases a lock of LEASE on client, with nodes 3 and 4 held
    up so that the quorum needs node 2's answer: the client then knows node
    2's run_id (from the INFO of its connection's handshake), which is how a
    restart of node 2 can be told later. A call returns at a quorum, so
    without this the first three answers could all come from other nodes."""
    for i in (3, 4):
        nodes.pause(i, 500)
    lock = client.get_lock("warm-up")
    assert lock.try_lock(lease=LEASE)
    lock.unlock()
    for i in (3, 4):
        assert nodes.cli(i, "PING") == "PONG"   # answered once the pause is over


def rival(nodes, make_client, guard):
    """A second client that has used every node, with leases of LEASE, the
    longest any client of these nodes uses (max_lease_ms). Without the
    records (restart_records=0): the guard this client keeps is the subject
    here, and nodes 0 and 1, restarted empty, would be held back by the
    records too, so that its warm-up, with 3 and 4 held up, could not count
    them."""
    client = make_client(nodes.uris, restart_guard=guard, restart_records="0",
                         max_lease_ms=int(LEASE * 1000))
    warm_up(nodes, client)
    return client


def test_without_the_guard_a_second_client_gets_in(nodes, make_client, crash):
    holder = hold_on_a_bare_quorum(nodes, make_client)
    other = rival(nodes, make_client, "0")
    old_run_id = nodes.run_id(2)
    crash(2)
    assert nodes.run_id(2) != old_run_id

    intruder = other.get_lock("crash")
    assert intruder.try_lock(lease=LEASE)
    # Two holders at once: what the guard exists to prevent.
    assert holder.validity > 0 and intruder.validity > 0
    assert nodes.holders("crash", intruder.token) == [0, 1, 2]


def test_with_the_guard_the_restarted_node_waits_out_the_lease(nodes, make_client, crash):
    holder = hold_on_a_bare_quorum(nodes, make_client)
    other = rival(nodes, make_client, "1")
    crash(2)
    noticed = time.monotonic()

    # The restart is noticed on the first call after it, and the node is
    # set aside for max_lease_ms.
    detail = expect_failure(other, "crash", redlock.LockError, lease=LEASE)
    set_aside = re.search(r"not counted for (\d+) ms more \(restart_guard\)", detail)
    assert set_aside, detail
    assert LEASE - 1.0 < int(set_aside.group(1)) / 1000 <= LEASE
    assert holder.validity > 0
    assert nodes.having("crash") == [3, 4]

    # Once max_lease_ms has passed, the node counts again; by then the
    # holder's lease is over too.
    time.sleep(max(0.0, noticed + LEASE + 0.2 - time.monotonic()))
    assert holder.validity <= 0
    successor = other.get_lock("crash")
    assert successor.try_lock(lease=LEASE, wait=2.0)
    successor.unlock()


def test_the_guard_is_on_by_default(nodes, make_client, crash):
    holder = hold_on_a_bare_quorum(nodes, make_client)
    client = make_client(nodes.uris, restart_records="0")   # the guard alone, as rival's
    warm_up(nodes, client)
    crash(2)
    assert not client.get_lock("crash").try_lock(lease=LEASE)
    assert holder.validity > 0


def test_a_wait_outlasts_the_guard(nodes, make_client, crash):
    """Nodes held back by the guard are a wait with a known end, not an
    outage: with three of five restarted, a call that may wait longer than
    the guard goes on past unavailable_timeout_ms, and takes the lock once
    the guard ends (it used to give up with NoQuorum after that timeout)."""
    client = make_client(nodes.uris, max_lease_ms=int(LEASE * 1000), unavailable_timeout_ms=500)
    warm_up(nodes, client)
    for i in (2, 3, 4):
        crash(i)
    detail = expect_failure(client, "crash", redlock.NoQuorum, lease=LEASE)
    left = int(re.search(r"not counted for (\d+) ms more \(restart_guard\)", detail).group(1))
    started = time.monotonic()
    lock = client.get_lock("crash")
    assert lock.try_lock(lease=LEASE, wait=LEASE + 5.0)
    waited = time.monotonic() - started
    lock.unlock()
    # Well past the outage timeout, and taken at the guard's end.
    assert left / 1000 - 1.0 <= waited <= left / 1000 + 1.0, (left, waited)


def records_case(nodes, make_client, crash, records):
    """The holder's lock on all five nodes, then three of them restart
    without their data: a client that never met them tries the same lock."""
    options = dict(restart_records=records, max_lease_ms=int(LEASE * 1000))
    holder = make_client(nodes.uris, **options).get_lock("crash")
    assert holder.try_lock(lease=LEASE)   # a fresh group: at once, all nodes answering
    assert nodes.holders("crash", holder.token) == [0, 1, 2, 3, 4]
    for i in (2, 3, 4):
        crash(i)
    return holder, make_client(nodes.uris, **options)


def test_without_records_a_late_client_gets_in(nodes, make_client, crash):
    holder, late = records_case(nodes, make_client, crash, "0")
    intruder = late.get_lock("crash")
    assert intruder.try_lock(lease=LEASE)
    assert holder.validity > 0 and intruder.validity > 0   # two holders: what records prevent
    assert nodes.holders("crash", intruder.token) == [2, 3, 4]


def test_the_records_hold_a_late_client_back(nodes, make_client, crash):
    """restart_records: the two nodes that kept their data record the
    servers they knew; the three new ones replaced servers the records name,
    so a client that never met them counts them only once they have run for
    max_lease_ms, whatever the guard keys (gone with the data) would say."""
    holder, late = records_case(nodes, make_client, crash, "1")
    detail = expect_failure(late, "crash", redlock.LockError, lease=LEASE)
    assert "may have lost its data" in detail, detail
    held = re.search(r"not counted for (\d+) ms more \(restart_guard\)", detail)
    assert held and 0 < int(held.group(1)) <= LEASE * 1000, detail
    assert holder.validity > 0
    assert nodes.holders("crash", holder.token) == [0, 1]
    # A wait outlasts it: once the new servers have run for max_lease_ms,
    # they count, and the holder's lease is over by then.
    lock = late.get_lock("crash")
    assert lock.try_lock(lease=LEASE, wait=LEASE + 3.0)
    assert holder.validity <= 0
    lock.unlock()
