"""redlock.asyncio's wake-ups: a lock that waits for one held elsewhere is
woken by the release itself. While any lock of the client waits, one
subscriber connection per node listens to the releases of the keys waited
for; who is woken when is the library's rule (redlock_waiters)."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional, Protocol

from . import _capi, capi
from ._aio_base import _NEVER, _now


class _Opener(Protocol):
    """What the wake-ups need of the client's driver (_aio_driver._Driver)."""

    ctx: Any
    n_nodes: int
    loop: asyncio.AbstractEventLoop

    def open(self, node: int, protocol: Any, c: Any = None) -> asyncio.Task[Any]: ...


class _Waiting(Protocol):
    """A lock run that waits for a release (_aio_driver._Run)."""

    op: Any
    wait_id: int

    def woken(self) -> None: ...


# What the wake-ups ask of the driver (redlock_waiters_drive's bits).
_CONNECT, _WRITE, _CLOSE, _WAKE = (capi.REDLOCK_WAITERS_CONNECT, capi.REDLOCK_WAITERS_WRITE,
                                   capi.REDLOCK_WAITERS_CLOSE, capi.REDLOCK_WAITERS_WAKE)


class _Sub(asyncio.Protocol):
    """A subscriber connection to one node: it moves bytes between the node
    and the client's redlock_waiters, and reports its connect and its end."""

    def __init__(self, wakes: _Wakes, node: int) -> None:
        self.wakes = wakes
        self.node = node
        self.transport: Optional[asyncio.Transport] = None
        self.connecting: Optional[asyncio.Task[Any]] = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.closed:
            transport.close()
            return
        _capi.redlock_waiters_connected(self.wakes.waiters, self.node)
        self.wakes.tend()

    def data_received(self, data: bytes) -> None:
        if not self.closed:
            _capi.redlock_waiters_received(self.wakes.waiters, self.node, data, len(data), _now())
            self.wakes.tend()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.transport = None
        self.ended("connection lost")

    def ended(self, why: str, tls: bool = False) -> None:
        """The connection failed: the library makes it again after a pause."""
        if not self.closed:
            self.wakes.lost(self)

    def flush(self) -> None:
        if self.transport is not None and not self.closed:
            out = _capi.redlock_waiters_output(self.wakes.waiters, self.node)
            if out:
                self.transport.write(out)
                _capi.redlock_waiters_wrote(self.wakes.waiters, self.node, len(out))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        if self.connecting is not None:
            self.connecting.cancel()


class _Wakes:
    """Waiting locks woken by releases (redlock_engine.h's wake-ups): the
    client's redlock_waiters, with the lock runs registered in it. When to
    connect, what to write, what a message means and when to close are the
    library's: this class connects, writes and closes as it says, and wakes
    the runs it names."""

    def __init__(self, driver: _Opener) -> None:
        self.driver = driver
        self.waiters = _capi.redlock_waiters_new(driver.ctx)
        self.runs: Dict[int, _Waiting] = {}
        self.last_id = 0
        self.subs: List[Optional[_Sub]] = [None] * driver.n_nodes
        self.timer: Optional[asyncio.TimerHandle] = None  # when tend() is due again
        self.closed = False

    def add(self, run: _Waiting) -> None:
        """Registers a lock run that waits for a release of its keys; one
        the library cannot register keeps its timed retries only."""
        if self.closed:
            return
        self.last_id += 1
        if _capi.redlock_waiters_add(self.waiters, self.last_id, run.op) == capi.REDLOCK_OK:
            run.wait_id = self.last_id
            self.runs[run.wait_id] = run
            self.tend()

    def remove(self, run: _Waiting, op: Any) -> None:
        """Ends the registration of a run whose op is done (its message
        says so if a node refused the subscription)."""
        _capi.redlock_waiters_remove(self.waiters, run.wait_id, op, _now())
        del self.runs[run.wait_id]
        run.wait_id = 0
        self.tend()

    def lost(self, sub: _Sub) -> None:
        """A subscriber connection failed."""
        self.subs[sub.node] = None
        sub.close()
        _capi.redlock_waiters_lost(self.waiters, sub.node, _now())
        self.tend()

    def tend(self) -> None:
        """Does what the library says now, and comes back at the time it
        gives."""
        if self.closed:
            return
        waiters = self.waiters
        todo, at = _capi.redlock_waiters_drive(waiters, _now())
        if todo & _CLOSE:
            while (node := _capi.redlock_waiters_next_close(waiters)) >= 0:
                sub = self.subs[node]
                self.subs[node] = None
                if sub is not None:
                    sub.close()
        if todo & _CONNECT:
            while (node := _capi.redlock_waiters_next_connect(waiters)) >= 0:
                sub = self.subs[node] = _Sub(self, node)
                sub.connecting = self.driver.open(node, sub)
        if todo & _WRITE:
            for sub in self.subs:
                if sub is not None:
                    sub.flush()
        if todo & _WAKE:
            while (wait_id := _capi.redlock_waiters_next(waiters)):
                run = self.runs.get(wait_id)
                if run is not None:
                    run.woken()
        if self.timer is not None:
            self.timer.cancel()
        self.timer = (self.driver.loop.call_later((at - _now()) / 1000, self.tend)
                      if at < _NEVER else None)

    def close(self) -> None:
        """The client is closed (no run is left): the connections go."""
        if not self.closed:
            self.closed = True
            for sub in self.subs:
                if sub is not None:
                    sub.close()
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            _capi.redlock_waiters_free(self.waiters)
