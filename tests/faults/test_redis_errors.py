"""Scenario 6: nodes answer with Redis errors. Each ends in a clear code and
a detail that names the error: READONLY (a node turned replica), OOM
(maxmemory with noeviction), WRONGTYPE, NOAUTH; NOSCRIPT after SCRIPT FLUSH
is handled (the script is sent again in full)."""

import pytest

import redlock
from harness import free_port, wait_until

MAJORITY = (0, 1, 2)
LEASE = 10.0
# Deadlines are not the subject here: generous ones, for a busy machine.
PATIENT = {"node_timeout_ms": 2000, "connect_timeout_ms": 2000}


def make_read_only(nodes, i):
    """A replica of a master that is not there: every write is refused."""
    assert nodes.cli(i, "REPLICAOF", "127.0.0.1", str(free_port())) == "OK"


def make_full(nodes, i):
    assert nodes.cli(i, "CONFIG", "SET", "maxmemory-policy", "noeviction") == "OK"
    assert nodes.cli(i, "CONFIG", "SET", "maxmemory", "1") == "OK"


REFUSALS = [(make_read_only, "READONLY"), (make_full, "OOM")]


@pytest.mark.parametrize("refuse, word", REFUSALS, ids=["readonly", "oom"])
def test_a_majority_refusing_writes_is_a_redis_error(nodes, make_client, refuse, word):
    client = make_client(nodes.uris, **PATIENT)
    for i in MAJORITY:
        refuse(nodes, i)
    with pytest.raises(redlock.RedisError, match=word):
        client.get_lock("refused").try_lock(lease=LEASE)
    # A multi-lock goes through a script: the same answer.
    with pytest.raises(redlock.RedisError, match=word):
        client.get_multi_lock("refused-a", "refused-b").try_lock(lease=LEASE)
    assert nodes.having("refused") == []
    assert nodes.having("refused-a") == []


@pytest.mark.parametrize("refuse", [make_read_only, make_full], ids=["readonly", "oom"])
def test_a_minority_refusing_writes_does_not_matter(nodes, make_client, refuse):
    client = make_client(nodes.uris, **PATIENT)
    for i in (0, 1):
        refuse(nodes, i)
    lock = client.get_lock("minority-refused")
    assert lock.try_lock(lease=LEASE)
    assert nodes.holders("minority-refused", lock.token) == [2, 3, 4]
    lock.extend(LEASE)
    lock.unlock()
    assert nodes.having("minority-refused") == []


def test_read_only_nodes_during_extend_and_unlock(nodes, make_client):
    lock = make_client(nodes.uris, **PATIENT).get_lock("refused-later")
    assert lock.try_lock(lease=LEASE)
    for i in MAJORITY:
        make_read_only(nodes, i)
    with pytest.raises(redlock.RedisError, match="READONLY"):
        lock.extend(LEASE)
    with pytest.raises(redlock.RedisError, match="READONLY"):
        lock.unlock()
    assert not lock.is_held()


def test_full_nodes_still_extend_and_release(nodes, make_client):
    """Redis refuses only commands that may grow memory: PEXPIRE and DEL
    go through under maxmemory, so a lock held before stays usable."""
    lock = make_client(nodes.uris, **PATIENT).get_lock("full-later")
    assert lock.try_lock(lease=LEASE)
    for i in range(len(nodes)):
        make_full(nodes, i)
    lock.extend(2 * LEASE)
    lock.unlock()
    assert nodes.having("full-later") == []


def test_wrong_type_keys(nodes, make_client):
    client = make_client(nodes.uris, **PATIENT)
    for i in range(len(nodes)):
        nodes.cli(i, "RPUSH", "a-list", "x")
    with pytest.raises(redlock.WrongTypeError, match="list"):
        client.get_lock("a-list").try_lock(lease=LEASE)
    with pytest.raises(redlock.WrongTypeError):
        client.get_multi_lock("free", "a-list").try_lock(lease=LEASE)
    assert nodes.having("free") == []

    # The key of a held lock replaced by another type on every node.
    lock = client.get_lock("replaced")
    assert lock.try_lock(lease=LEASE)
    for i in range(len(nodes)):
        nodes.cli(i, "DEL", "replaced")
        nodes.cli(i, "HSET", "replaced", "f", "v")
    with pytest.raises(redlock.WrongTypeError):
        lock.extend(LEASE)
    assert not lock.is_held()
    for i in range(len(nodes)):
        assert nodes.cli(i, "TYPE", "replaced") == "hash"


def test_noauth_when_the_nodes_start_requiring_a_password(nodes, make_client):
    for i in range(len(nodes)):
        assert nodes.cli(i, "CONFIG", "SET", "requirepass", "s3cret") == "OK"
    with pytest.raises(redlock.AuthError) as caught:
        make_client(nodes.uris, **PATIENT).get_lock("auth").try_lock(lease=LEASE)
    assert "s3cret" not in str(caught.value)
    uris = [uri.replace("redis://", "redis://:s3cret@") for uri in nodes.uris]
    lock = make_client(uris, **PATIENT).get_lock("auth")
    assert lock.try_lock(lease=LEASE)
    lock.unlock()


def test_noscript_after_script_flush(nodes, make_client):
    client = make_client(nodes.uris, **PATIENT)
    single = client.get_lock("flushed")
    multi = client.get_multi_lock("flushed-a", "flushed-b")
    assert single.try_lock(lease=LEASE)
    assert multi.try_lock(lease=LEASE)
    for i in range(len(nodes)):
        assert nodes.cli(i, "SCRIPT", "FLUSH") == "OK"
    single.extend(2 * LEASE)
    multi.extend(2 * LEASE)
    # The call returns at a quorum; the last node may still be at it.
    wait_until(lambda: all(int(nodes.cli(i, "PTTL", "flushed")) > LEASE * 1000
                           for i in range(len(nodes))), 3, "the extension on every node")
    for i in range(len(nodes)):
        nodes.cli(i, "SCRIPT", "FLUSH")
    single.unlock()
    multi.unlock()
    for i in range(len(nodes)):
        nodes.cli(i, "SCRIPT", "FLUSH")
    assert multi.try_lock(lease=LEASE)
    multi.unlock()
    wait_until(lambda: nodes.having("flushed") == nodes.having("flushed-a") == [], 3,
               "the release on every node")
