"""Fencing tokens (client option fencing): lock.fence grows with every
holder of a resource, whichever client, sync or asyncio, took it; a
multi-lock has one per resource in lock.fences; without fencing both say
nothing; extend keeps the fence."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import record_group, redis_cli

import redlock
import redlock.asyncio as aredlock


@pytest.fixture
def fenced(nodes, prefix):
    # A group in use: a fresh group's first fenced lock counts each of its
    # two rounds (its fence is 2), and these tests count fences from 1.
    record_group(nodes, prefix)
    with redlock.Redlock(nodes.uris, key_prefix=prefix, fencing=1) as c:
        yield c


def test_every_holder_gets_a_larger_fence(nodes, prefix, fenced):
    with redlock.Redlock(nodes.uris, key_prefix=prefix, fencing=1) as second:
        seen = []
        for client in (fenced, second, fenced, second):
            lock = client.get_lock("ledger")
            assert lock.try_lock(lease=10)
            seen.append(lock.fence)
            assert lock.fences == {"ledger": lock.fence}
            lock.unlock()
            assert lock.fence is None and lock.fences == {}
        assert seen == sorted(seen) and len(set(seen)) == 4 and seen[0] >= 1


def test_a_multi_lock_has_a_fence_per_resource(fenced):
    single = fenced.get_lock("b")
    assert single.try_lock(lease=10)
    single.unlock()
    both = fenced.get_multi_lock("a", "b")
    assert both.try_lock(lease=10)
    assert both.fences == {"a": 1, "b": 2}
    assert both.fence == 1           # the first resource's
    both.unlock()


def test_extend_keeps_the_fence(fenced):
    lock = fenced.get_lock("extended")
    assert lock.try_lock(lease=5)
    fence = lock.fence
    lock.extend(10)
    assert lock.fence == fence
    lock.unlock()


def test_without_fencing_there_is_no_fence_and_no_counter(nodes, prefix, client):
    lock = client.get_lock("plain")
    assert lock.try_lock(lease=10)
    assert lock.fence is None and lock.fences == {}
    lock.unlock()
    # (Only the guard's key and the group's record, kept by every
    # connection's handshake.)
    keys = redis_cli(nodes.uris[0], "KEYS", f"{prefix}*").split()
    assert sorted(keys) == [f"{prefix}redlock:guard", f"{prefix}redlock:members"]


def test_the_rlock_shows_its_locks_fence(fenced):
    rlock = fenced.get_rlock("reentrant")
    assert rlock.try_lock(lease=10)
    assert rlock.try_lock(lease=10)
    assert rlock.lock.fence == 1
    rlock.release()
    rlock.release()


@pytest.mark.asyncio
async def test_asyncio_fences_continue_the_sync_ones(nodes, prefix, fenced):
    lock = fenced.get_lock("shared")
    assert lock.try_lock(lease=10)
    first = lock.fence
    lock.unlock()
    async with aredlock.Redlock(nodes.uris, key_prefix=prefix, fencing=1) as client:
        alock = client.get_lock("shared")
        assert await alock.try_lock(lease=10)
        assert alock.fence > first and alock.fences == {"shared": alock.fence}
        await alock.unlock()
        assert alock.fence is None
        multi = client.get_multi_lock("shared", "other")
        assert await multi.try_lock(lease=10)
        assert multi.fences == {"shared": first + 2, "other": 1}
        await multi.unlock()


def test_the_example_refuses_the_paused_holders_late_write(nodes):
    """examples/fencing.py: a holder stopped (SIGSTOP) past its lease has its
    late write refused by a store that checks fences; the next holder's
    write stands."""
    example = Path(__file__).resolve().parents[3] / "examples" / "fencing.py"
    env = dict(os.environ, PYTHONPATH=str(Path(redlock.__file__).parent.parent))
    done = subprocess.run([sys.executable, str(example), *nodes.uris], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "first holder:  fence 1, write accepted: True"
    # The second holder's attempts while the first held the lock counted too.
    second = re.fullmatch(r"second holder: fence (\d+), write accepted: True", lines[1])
    assert second and int(second.group(1)) > 1
    assert lines[2] == "first holder, after its pause: write accepted: False"
    assert lines[4] == "the late write was refused"
