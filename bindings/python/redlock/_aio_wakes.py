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


class _Sub(asyncio.Protocol):
    """A subscriber connection to one node (the engine's redlock_sub): it
    hears the releases of the keys waited for, and passes what it hears to
    the client's _Wakes."""

    def __init__(self, wakes: _Wakes, node: int) -> None:
        self.wakes = wakes
        self.node = node
        self.sub = _capi.redlock_sub_new(wakes.driver.ctx, node)
        self.transport: Optional[asyncio.Transport] = None
        self.connecting: Optional[asyncio.Task[Any]] = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.closed:
            transport.close()
            return
        self.wakes.tend()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        sub, waiters = self.sub, self.wakes.waiters
        broken = _capi.redlock_sub_received(sub, data, len(data)) != 0
        while not broken:
            event = _capi.redlock_sub_next(sub)
            if event == 0:
                break
            broken = event < 0 or _capi.redlock_waiters_event(
                waiters, self.node, event, _capi.redlock_sub_channel(sub),
                _capi.redlock_sub_text(sub)) != 0
        self.wakes.wake_woken()
        if broken:
            self.ended("broken or refused")

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.transport = None
        self.ended("connection lost")

    def ended(self, why: str, tls: bool = False) -> None:
        """The connection failed: it is made again after a pause."""
        if not self.closed:
            self.wakes.lost(self)

    def flush(self) -> None:
        if self.transport is not None and not self.closed:
            out = _capi.redlock_sub_output(self.sub)
            if out:
                self.transport.write(out)
                _capi.redlock_sub_wrote(self.sub, len(out))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        if self.connecting is not None:
            self.connecting.cancel()
        _capi.redlock_sub_free(self.sub)


class _Wakes:
    """Waiting locks woken by releases (redlock_engine.h's wake-ups): the
    client's redlock_waiters, with the lock runs registered in it, and while
    any waits (and for a while after, as the library says) one subscriber
    connection per node. Who is woken when is the library's rule; this
    class moves bytes and keeps the connections as it says."""

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

    def wake_woken(self) -> None:
        while True:
            wait_id = _capi.redlock_waiters_next(self.waiters)
            if not wait_id:
                return
            run = self.runs.get(wait_id)
            if run is not None:
                run.woken()

    def lost(self, sub: _Sub) -> None:
        """A subscriber connection failed (or the node refused it)."""
        self.subs[sub.node] = None
        sub.close()
        _capi.redlock_waiters_closed(self.waiters, sub.node, 1, _now())
        self.tend()

    def tend(self) -> None:
        """Makes the subscriber connections what the waiters need now: made
        when due, subscribed to what they wait for, closed once idle; and
        comes back when that changes with time."""
        if self.closed:
            return
        now = _now()
        idle_at = _capi.redlock_waiters_idle_at(self.waiters)
        if now >= idle_at:
            self._close_subs(now)
            return
        next_at = idle_at
        for node, sub in enumerate(self.subs):
            if sub is None:
                if idle_at < _NEVER:
                    continue  # nobody waits: none is made
                at = _capi.redlock_waiters_connect_at(self.waiters, node)
                if now >= at:
                    sub = self.subs[node] = _Sub(self, node)
                    sub.connecting = self.driver.open(node, sub)
                else:
                    next_at = min(next_at, at)
            elif sub.transport is not None:
                _capi.redlock_waiters_match(self.waiters, node, sub.sub)
                sub.flush()
        if self.timer is not None:
            self.timer.cancel()
        self.timer = (self.driver.loop.call_later((next_at - now) / 1000, self.tend)
                      if next_at < _NEVER else None)

    def _close_subs(self, now: int) -> None:
        for node, sub in enumerate(self.subs):
            if sub is not None:
                self.subs[node] = None
                sub.close()
                _capi.redlock_waiters_closed(self.waiters, node, 0, now)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def close(self) -> None:
        """The client is closed (no run is left): the connections go."""
        if not self.closed:
            self._close_subs(_now())
            self.closed = True
            _capi.redlock_waiters_free(self.waiters)
