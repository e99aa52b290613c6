"""Scenario 1: a minority of nodes is down, killed, paused, slow, cut off,
silent, resetting connections or throttled. Locks are still acquired,
extended and released, each call within about one node deadline, on the
healthy majority."""

import pytest

from assertions import LONG_FAULT_MS, NODE_TIMEOUT_MS, SLACK, timed
from harness import IMPAIRMENTS, impair

LEASE = 10.0
BOUND = NODE_TIMEOUT_MS / 1000 + SLACK


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize("how", IMPAIRMENTS)
def test_two_of_five_impaired_still_lock(proxied, make_client, how, warm):
    client = make_client(proxied.uris)
    if warm:
        # Pooled connections to every node exist before the fault.
        warm_up = client.get_lock("warm-up")
        assert warm_up.try_lock(lease=LEASE)
        warm_up.unlock()
    for i in (0, 1):
        impair(proxied, i, how, LONG_FAULT_MS)

    lock = client.get_lock("minority")
    with timed() as took:
        assert lock.try_lock(lease=LEASE)
    assert took[0] < BOUND
    assert 0 < lock.validity <= LEASE - took[0]
    # The quorum is the three healthy nodes: each holds our token.
    assert proxied.nodes.holders("minority", lock.token)[-3:] == [2, 3, 4]

    with timed() as took:
        lock.extend(2 * LEASE)
    assert took[0] < BOUND
    assert lock.validity > LEASE
    with timed() as took:
        lock.unlock()
    assert took[0] < BOUND
    for i in (2, 3, 4):
        assert proxied.nodes.cli(i, "EXISTS", "minority") == "0"
