"""Scenario 5: connections lost while releasing or extending. The call
answers NoQuorum within about one node deadline (no crash, no hang), the
client's view is clear (an unlock leaves the lock not held; a failed extend
leaves the old lease), and the keys on the nodes expire by themselves."""

import pytest

import redlock
from assertions import NODE_TIMEOUT_MS, SLACK, timed
from harness import wait_until

LEASE = 2.0
BOUND = NODE_TIMEOUT_MS / 1000 + SLACK


def lose_connections(proxied, how):
    for i in range(len(proxied.nodes)):
        if how == "cut":
            proxied.cut(i)
        elif how == "reset":
            proxied.toxic(i, "reset_peer", "upstream", timeout=0)
        elif how == "blackhole":
            proxied.toxic(i, "timeout", "upstream", timeout=0)
        else:
            # The connection closes after 16 bytes: the command arrives cut short.
            proxied.toxic(i, "limit_data", "upstream", bytes=16)


LOSSES = ["cut", "reset", "blackhole", "truncated"]


@pytest.mark.parametrize("how", LOSSES)
def test_connections_lost_during_unlock(proxied, make_client, how):
    nodes = proxied.nodes
    lock = make_client(proxied.uris).get_lock("unlock-lost")
    assert lock.try_lock(lease=LEASE)
    token = lock.token
    # A call returns at a quorum; let the last SETs land before the cut.
    wait_until(lambda: nodes.holders("unlock-lost", token) == [0, 1, 2, 3, 4], 3,
               "every node to hold the token")
    lose_connections(proxied, how)

    with timed() as took:
        with pytest.raises(redlock.NoQuorum):
            lock.unlock()
    assert took[0] < BOUND
    assert not lock.is_held()
    with pytest.raises(redlock.LockNotHeld):
        lock.unlock()
    # The release never reached the nodes; the keys expire with the lease.
    assert nodes.holders("unlock-lost", token) == [0, 1, 2, 3, 4]
    wait_until(lambda: nodes.having("unlock-lost") == [], LEASE + 2, "the keys to expire")


@pytest.mark.parametrize("how", LOSSES)
def test_connections_lost_during_extend(proxied, make_client, how):
    nodes = proxied.nodes
    lock = make_client(proxied.uris).get_lock("extend-lost")
    assert lock.try_lock(lease=LEASE)
    # A call returns at a quorum; let the last SETs land before the cut.
    wait_until(lambda: nodes.holders("extend-lost", lock.token) == [0, 1, 2, 3, 4], 3,
               "every node to hold the token")
    lose_connections(proxied, how)

    with timed() as took:
        with pytest.raises(redlock.NoQuorum):
            lock.extend(60.0)
    assert took[0] < BOUND
    # Nothing was extended: the old lease still bounds the lock.
    assert 0 < lock.validity < LEASE
    for i in range(len(nodes)):
        assert 0 < int(nodes.cli(i, "PTTL", "extend-lost")) <= LEASE * 1000
    wait_until(lambda: nodes.having("extend-lost") == [], LEASE + 2, "the keys to expire")
    assert lock.validity <= 0


def test_a_minority_lost_during_unlock_and_extend(proxied, make_client):
    lock = make_client(proxied.uris).get_lock("minority-lost")
    assert lock.try_lock(lease=LEASE)
    proxied.cut(0)
    proxied.toxic(1, "reset_peer", "upstream", timeout=0)
    lock.extend(LEASE)
    lock.unlock()
    # Released where the release arrived; left to expire on the lost nodes.
    wait_until(lambda: proxied.nodes.having("minority-lost") == [0, 1], 3,
               "the release on nodes 2, 3 and 4")
