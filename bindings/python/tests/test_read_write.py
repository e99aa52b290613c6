"""Read-write locks (client.get_read_write_lock) and the synchronize
decorator, against five real nodes."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest

import redlock

SHARED = "redlock:readers"


def key_on_nodes(nodes, name: str) -> List[object]:
    """What each node holds under the lock's key (None: nothing)."""
    import subprocess

    values = []
    for uri in nodes.uris:
        port = uri.rsplit(":", 1)[1]
        out = subprocess.run(["redis-cli", "-p", port, "--raw", "GET", name], check=True,
                             capture_output=True, text=True).stdout.rstrip("\n")
        values.append(out or None)
    return values


def readers_on_nodes(nodes, name: str) -> List[object]:
    """The readers each node lists under the lock's key, as a set of tokens
    (None: the key is not shared by readers)."""
    found = []
    for value in key_on_nodes(nodes, name):
        if value is None or not value.startswith(SHARED + " "):
            found.append(None)
        else:
            found.append({entry.split(":")[0] for entry in value[len(SHARED):].split()})
    return found


def test_readers_share_it_and_the_writer_waits_for_all_of_them(nodes) -> None:
    with redlock.Redlock(nodes.uris) as one, redlock.Redlock(nodes.uris) as two, \
            redlock.Redlock(nodes.uris, retry_delay_ms=50) as three:
        first = one.get_read_write_lock("py-rw")
        second = two.get_read_write_lock("py-rw")
        writer = three.get_read_write_lock("py-rw").write_lock()
        assert first.read_lock().try_lock(lease=5.0)
        assert second.read_lock().try_lock()   # kept
        assert first.read_lock().token != second.read_lock().token
        both = {first.read_lock().token, second.read_lock().token}
        assert readers_on_nodes(nodes, "py-rw") == [both] * 5
        assert not writer.try_lock(lease=1.0)
        assert not three.get_lock("py-rw").try_lock(lease=1.0)   # a plain lock of the name
        assert first.read_lock().locked()

        got = []
        waiting = threading.Thread(target=lambda: got.append(writer.try_lock(wait=5.0,
                                                                             lease=2.0)))
        waiting.start()
        time.sleep(0.2)
        first.read_lock().unlock()
        time.sleep(0.2)
        assert not got   # the second reader still holds it
        second.read_lock().unlock()
        waiting.join()
        assert got == [True]
        assert key_on_nodes(nodes, "py-rw") == [writer.token] * 5
        assert not first.read_lock().try_lock(lease=1.0)
        writer.unlock()
        assert key_on_nodes(nodes, "py-rw") == [None] * 5


def test_a_writer_downgrades_and_a_reader_is_not_upgraded(nodes) -> None:
    with redlock.Redlock(nodes.uris) as client, redlock.Redlock(nodes.uris) as other:
        rw = client.get_read_write_lock("py-rw-down")
        assert rw.read_lock() is rw.read_lock() and rw.name == "py-rw-down"
        with rw.write_lock():
            assert rw.read_lock().try_lock(lease=5.0)   # beside its own write lock
            assert not other.get_read_write_lock("py-rw-down").read_lock().try_lock()
        # The write lock is gone; its reader stays, and others may join.
        assert readers_on_nodes(nodes, "py-rw-down") == [{rw.read_lock().token}] * 5
        joined = other.get_read_write_lock("py-rw-down").read_lock()
        assert joined.try_lock(lease=1.0)
        with pytest.raises(redlock.InvalidArgument, match="upgraded"):
            rw.write_lock().try_lock()
        rw.read_lock().unlock()
        joined.unlock()
        assert key_on_nodes(nodes, "py-rw-down") == [None] * 5


def test_a_kept_read_lock_outlives_its_lease(nodes) -> None:
    with redlock.Redlock(nodes.uris, watchdog_lease_ms=900) as client, \
            redlock.Redlock(nodes.uris) as other:
        reader = client.get_read_write_lock("py-rw-kept").read_lock()
        with reader:
            time.sleep(2.5)
            assert not reader.lost
            assert not other.get_read_write_lock("py-rw-kept").write_lock().try_lock()
        assert key_on_nodes(nodes, "py-rw-kept") == [None] * 5


def test_synchronize_runs_the_function_under_the_lock(nodes) -> None:
    with redlock.Redlock(nodes.uris) as client, redlock.Redlock(nodes.uris) as other:
        seen = []

        @client.synchronize("py-sync", wait=2.0)
        def work(x: int) -> int:
            """Doubles x."""
            seen.append(other.get_lock("py-sync").try_lock(lease=1.0))
            return 2 * x

        assert work(21) == 42
        assert seen == [False]   # held while it ran
        assert work.__doc__ == "Doubles x." and work.__name__ == "work"
        held = other.get_lock("py-sync")
        assert held.try_lock(lease=5.0)   # released after

        @client.synchronize("py-sync", wait=0.1)
        def blocked() -> None:
            raise AssertionError("ran without the lock")

        with pytest.raises(redlock.LockNotAcquired):
            blocked()
        held.unlock()
        with pytest.raises(TypeError, match="coroutine"):
            @client.synchronize("py-sync")
            async def not_here() -> None:
                pass
        with pytest.raises(ValueError):
            client.synchronize("")


def test_asyncio_read_write_lock_and_synchronize(nodes) -> None:
    import asyncio

    import redlock.asyncio as aredlock

    async def run() -> None:
        async with aredlock.Redlock(nodes.uris) as one, \
                aredlock.Redlock(nodes.uris, retry_delay_ms=50) as two:
            rw = one.get_read_write_lock("py-aio-rw")
            assert await rw.read_lock().try_lock()   # kept
            other = two.get_read_write_lock("py-aio-rw")
            assert await other.read_lock().try_lock(lease=2.0)
            assert not await two.get_read_write_lock("py-aio-rw").write_lock().try_lock()
            with pytest.raises(redlock.InvalidArgument, match="upgraded"):
                await rw.write_lock().try_lock()
            await other.read_lock().unlock()
            await rw.read_lock().unlock()
            async with other.write_lock():
                assert key_on_nodes(nodes, "py-aio-rw") == [other.write_lock().token] * 5
                assert not await rw.read_lock().try_lock()
                assert await other.read_lock().try_lock(lease=2.0)   # a downgrade
            assert readers_on_nodes(nodes, "py-aio-rw") == [{other.read_lock().token}] * 5
            await other.read_lock().unlock()

            calls = []

            @one.synchronize("py-aio-sync", wait=1.0)
            async def work(x: int) -> int:
                calls.append(await two.get_lock("py-aio-sync").try_lock(lease=1.0))
                return x + 1

            assert await work(1) == 2
            assert calls == [False]
            with pytest.raises(TypeError, match="not a coroutine"):
                @one.synchronize("py-aio-sync")
                def plain() -> None:
                    pass

    asyncio.run(run())
