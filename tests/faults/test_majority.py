"""Scenario 2: a majority of nodes is impaired. Acquiring fails with "no
quorum" within about one node deadline (no hang, also while retrying), and
once the nodes recover no key of the failed attempts is left on any node."""

import time

import pytest

import redlock
from assertions import LONG_FAULT_MS, NODE_TIMEOUT_MS, SLACK, expect_failure, timed
from harness import IMPAIRMENTS, impair, wait_until

# Throttled nodes still answer a lock command in time: not an outage.
OUTAGES = [how for how in IMPAIRMENTS if how != "throttled"]

BOUND = NODE_TIMEOUT_MS / 1000 + SLACK
IMPAIRED = (0, 1, 2)


def recover(proxied):
    nodes = proxied.nodes
    proxied.heal()
    for i in IMPAIRED:
        if nodes.running(i):
            nodes.cli(i, "CLIENT", "UNPAUSE")
        else:
            nodes.start_node(i)


@pytest.mark.parametrize("how", OUTAGES)
def test_three_of_five_impaired_fail_fast_and_leave_nothing(proxied, make_client, how):
    nodes = proxied.nodes
    client = make_client(proxied.uris)
    warm_up = client.get_lock("warm-up")
    assert warm_up.try_lock(lease=10)
    # A call returns at a quorum: a node's INFO reply (its run_id, which the
    # restart guard compares with the one it sees after a restart) may be
    # unread yet. By the next call on the same connections it has arrived,
    # and that call reads it.
    time.sleep(0.2)
    warm_up.unlock()
    for i in IMPAIRED:
        impair(proxied, i, how, LONG_FAULT_MS)

    with timed() as took:
        detail = expect_failure(client, "majority", redlock.NoQuorum, lease=30)
    assert took[0] < BOUND
    assert any(f"127.0.0.1:{port}" in detail for port in proxied.ports(IMPAIRED)), detail
    # Retrying ends when the wait is over, with the same answer.
    with timed() as took:
        expect_failure(client, "majority", redlock.NoQuorum, lease=30, wait=1.0)
    assert 0.9 < took[0] < 1.0 + BOUND
    # The healthy nodes were released (the release may still be in flight).
    wait_until(lambda: nodes.having("majority") == [], 3, "the healthy nodes to be released")

    recover(proxied)
    if how in ("down", "killed"):
        # The three came back empty, with new run_ids: the restart guard sets
        # them aside for the largest lease this client used (30 s), so no
        # quorum yet.
        detail = expect_failure(client, "majority", redlock.NoQuorum, lease=30, wait=1.0)
        assert "restart_guard" in detail, detail
        # A client that never saw their old run_ids is held back too: the
        # records of the two others name the servers they replaced.
        late = make_client(proxied.uris)
        detail = expect_failure(late, "majority", redlock.NoQuorum, lease=30)
        assert "may have lost its data" in detail, detail
        # Its attempts were released everywhere (a release may still be in
        # flight: a SET arriving before it would be refused there).
        wait_until(lambda: nodes.having("majority") == [], 3, "the attempts to be released")
        # Recorded as the group's (as after max_lease_ms), they count at once
        # for a new client.
        nodes.record()
        client = make_client(proxied.uris)
    lock = client.get_lock("majority")
    assert lock.try_lock(lease=30, wait=10)
    # A call returns at a quorum; the last two SETs may still be on their way.
    wait_until(lambda: nodes.holders("majority", lock.token) == [0, 1, 2, 3, 4], 3,
               "every node to hold the token")
    lock.unlock()
    # Commands that the impaired nodes received late did not leave a key
    # behind (the lease, 30 s, is far longer than this wait).
    time.sleep(1)
    wait_until(lambda: nodes.having("majority") == [], 3, "no key left on any node")
