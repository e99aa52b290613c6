"""Redlock for asyncio: the sync client's surface, awaited.

    import redlock.asyncio

    async with redlock.asyncio.Redlock(["redis://10.0.0.1", "redis://10.0.0.2",
                                        "redis://10.0.0.3"]) as client:
        lock = client.get_lock("report")
        if await lock.try_lock(wait=2.0, lease=10.0):
            try:
                ...
            finally:
                await lock.unlock()

        async with client.lock("report", lease=10.0, wait=2.0):
            ...

The C library's engine decides everything (votes, retries, pauses, what a
late reply means); this module only moves its bytes over the running loop's
own connections (asyncio protocols), and wakes it when it asked to be woken.
No thread is used and no call blocks the loop.

A lock that waits for one held elsewhere is also woken by the release
itself: while any lock of the client waits, one subscriber connection per
node listens to the releases of the keys waited for, and the library says
which waiter tries again when (the rule of its blocking calls). Its timed
retries stay: a release only shortens the wait.

Cancellation: a cancelled acquire leaves no key behind (what the attempt had
taken is released, or, when it had already succeeded, the lock is unlocked);
a cancelled unlock, extend or close goes on to its end in the background.

Kept locks (no lease given) are renewed by a task on the loop, one per
acquisition, every third of the client's ``watchdog_lease_ms``; a lost one
sets ``lock.lost``, runs the ``on_lost`` callbacks on the loop and ends
``await lock.wait_lost()``.

Events go to the "redlock" logger, as the sync client's do, all of them
the C library's (acquired, released, no_quorum, node_down..., and the
renewal's renewal_failed and lost), told on the loop.

TLS (``rediss://`` nodes): the loop's own TLS (``ssl.SSLContext``, with
Python's OpenSSL), with the settings the C library's blocking calls use,
which it derives from the client's ``tls_*`` options (its checks of them
included), and failing the same way: a handshake or certificate check that
fails is ``TLSError``.

A client belongs to the event loop it is first used on.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import inspect
import ssl
import weakref
from contextlib import asynccontextmanager
from types import TracebackType
from typing import (Any, AsyncContextManager, AsyncIterator, Callable, Dict, List, Optional,
                    Sequence, Set, Tuple, Type)

from . import _capi, capi
from ._front import (
    _FOREVER_MS,
    DEFAULT_LEASE,
    OptionValue,
    _acquire_wait_ms,
    _check_name,
    _ClientFront,
    _lease_ms,
    _LockFront,
    _log,
    _logger,
    _millis,
    _half_repr,
    _names,
    _PermitFront,
    _ReadWriteFront,
    _Reentrant,
    _SemaphoreFront,
    _time_to_live,
    _wait_ms,
)
from .errors import (ClientClosed, InvalidArgument, LockError, LockExpired, LockNotAcquired,
                     LockNotHeld, error_for)

__all__ = ["DEFAULT_LEASE", "Lock", "Permit", "ReadWriteLock", "Redlock", "RLock", "Semaphore"]

_now = capi.redlock_now_ms
# The engine's calls made on every reply go straight to the extension module
# (the generated capi.py wraps each in one more Python call).
_received = _capi.redlock_conn_received
_output = _capi.redlock_conn_output
_wrote = _capi.redlock_conn_wrote
_op_drive = _capi.redlock_op_drive
_op_next_wanted = _capi.redlock_op_next_wanted
_op_react = _capi.redlock_op_react

# What the engine asks of a run (redlock_op_drive's bits).
_CONNECT = capi.REDLOCK_DRIVE_CONNECT
_WRITE = capi.REDLOCK_DRIVE_WRITE
_AWAITS = capi.REDLOCK_DRIVE_AWAITS
_DONE = capi.REDLOCK_DRIVE_DONE
_TAIL = capi.REDLOCK_DRIVE_TAIL

# The engine's "never" (INT64_MAX), and anything beyond.
_NEVER = 2**62


class _Conn(asyncio.BufferedProtocol):
    """One connection to a node: the engine's redlock_conn, fed by the
    loop's transport. The engine knows, for every byte, which command it
    belongs to; this class only carries bytes and events."""

    def __init__(self, driver: _Driver, node: int, conn: Any) -> None:
        self.driver = driver
        self.node = node
        self.conn = conn
        self.tls = bool(capi.redlock_ctx_node_tls(driver.ctx, node))
        self.replied = False  # the node sent bytes (over TLS: it accepted the session)
        self.run: Optional[_Run] = None  # the operation it serves, if any
        self.transport: Optional[asyncio.Transport] = None
        self.connecting: Optional[asyncio.Task[Any]] = None
        self.freed = False
        # Read into one buffer of the driver's (a buffered protocol): no new
        # bytes object per read.
        self.get_buffer = driver.get_buffer

    # -- the loop's events

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.freed:
            transport.close()
            return
        capi.redlock_conn_connected(self.conn, _now())
        self.event()

    def buffer_updated(self, nbytes: int) -> None:
        if self.freed:
            return
        self.replied = True
        run = self.run
        now = _now()
        if _received(self.conn, self.driver.buffer, nbytes, now) != 0:
            self.driver.close(self, None)
        elif run is not None and run.waiting is not None:
            # Most replies change nothing the run waits for (a vote before
            # the quorum): the engine says so in one call.
            if _op_react(run.op, self.conn, now, run.waiting):
                run.step()
            return
        else:
            self.flush()
        if run is not None:
            run.step()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.transport = None
        if isinstance(exc, ssl.SSLError):
            self.ended(f"TLS session failed (the node ended it): {exc.reason or exc}", True)
        elif self.tls and not self.replied:
            # With TLS 1.3 a node refuses a session (a client certificate
            # required, or refused) after the handshake, and its alert is
            # often lost in the reset, as the C library says too.
            cause = exc or "closed by the server"
            self.ended(f"TLS session refused: the node cut it before any reply ({cause}); "
                       "does it require a client certificate (tls_cert_file)?", True)
        else:
            self.ended(f"connection lost: {exc}" if exc
                       else "connection lost: closed by the server")

    def ended(self, why: str, tls: bool = False) -> None:
        """The socket failed (tls: TLS did, REDLOCK_ETLS for the engine)."""
        if not self.freed:
            run = self.run
            self.driver.close(self, why, tls)
            self.event(run)

    # -- the engine's side

    def event(self, run: Optional[_Run] = None) -> None:
        """Something happened: write what the engine queued, and let the
        operation served (or, for an idle connection, nobody) see it."""
        self.flush()
        run = run or self.run
        if run is not None:
            run.step()

    def flush(self) -> None:
        if self.freed or self.transport is None:
            return
        out = _output(self.conn)
        if out:
            # The transport buffers what the socket does not take at once.
            self.transport.write(out)
            _wrote(self.conn, len(out))


class _Run:
    """One engine operation driven to its end by the loop's callbacks. The
    caller awaits `future`: (status, message, handle)."""

    def __init__(self, driver: _Driver, op: Any, handle: Any, query: bool = False) -> None:
        self.driver = driver
        self.op = op
        self.handle = handle  # an unlock's handle, freed when the run ends
        self.query = query    # an inspect or force unlock: its answer is the result
        self.conns: Dict[int, _Conn] = {}
        self.timer: Optional[asyncio.TimerHandle] = None
        self.timer_at = 0
        self.future: asyncio.Future[Tuple[int, str, Any]] = driver.loop.create_future()
        self.abandoned = False  # the caller was cancelled: a lock gained is given back
        self.stepping = False
        self.again = False
        self.wait_id = 0  # registered with the driver's _Wakes while not 0
        self.may_wait = True  # a lock not yet registered (nor refused registration)
        # The wake-up time it waits for since its last step (redlock_op_react),
        # None when no step made it wait.
        self.waiting: Optional[int] = None
        # Called with the operation once done, before it is freed (a renewal
        # reads each lock's outcome from it).
        self.before_free: Optional[Callable[[Any], None]] = None

    def step(self) -> None:
        # Events may arrive while stepping (a connect that fails at once):
        # they are handled by one more pass, never by recursion.
        if self.stepping:
            self.again = True
            return
        self.stepping = True
        try:
            self.again = True
            while self.again and self.op is not None:
                self.again = False
                self._step_once()
        finally:
            self.stepping = False

    def _step_once(self) -> None:
        # The engine says what to do (redlock_op_drive); this does it.
        op = self.op
        now = _now()
        self.waiting = None
        what, at = _op_drive(op, now)
        while what & _CONNECT:
            node = _op_next_wanted(op, 0)
            while node >= 0:
                self.driver.attach(self, node, now)
                node = _op_next_wanted(op, node + 1)
            what, at = _op_drive(op, now)
        if what & _WRITE:
            for conn in self.conns.values():
                if conn.transport is not None and not conn.freed:
                    out = _output(conn.conn)
                    if out:
                        conn.transport.write(out)
                        _wrote(conn.conn, len(out))
        if what & _AWAITS and self.may_wait:
            self.may_wait = False
            self.driver.wakes.add(self)
        if not what & _DONE:
            self.waiting = at
        elif not what & _TAIL:
            self._finish(now)
            return
        # Waiting for events, or when decided, for the connections still
        # sending (every node reachable within its deadline gets the command).
        self._wake(at, now)

    def _wake(self, at: int, now: int) -> None:
        if self.timer is not None:
            if at == self.timer_at:
                return
            self.timer.cancel()
            self.timer = None
        if at < _NEVER:
            self.timer_at = at
            self.timer = self.driver.loop.call_later(max(0, at - now) / 1000, self._timer)

    def _timer(self) -> None:
        self.timer = None
        self.step()

    def woken(self) -> None:
        """A release of its keys: the pause ends, and a new attempt starts."""
        if self.op is not None:
            capi.redlock_op_wake(self.op, _now())
            self.step()

    def _finish(self, now: int) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        op, self.op = self.op, None
        if self.wait_id:
            self.driver.wakes.remove(self, op)
        status = capi.redlock_op_status(op)
        message = capi.redlock_op_message(op)
        handle = capi.redlock_op_take_handle(op)
        answer = tuple(capi.redlock_op_answer(op)) if self.query else None
        while True:
            c = capi.redlock_op_take_conn(op)
            if c is None:
                break
            self.driver.give_back(capi.redlock_conn_node(c), c)
        if self.before_free is not None:
            self.before_free(op)
        capi.redlock_op_free(op)
        if self.handle is not None:
            capi.redlock_handle_free(self.handle)
            self.handle = None
        self.conns.clear()
        self.driver.runs.discard(self)
        if self.abandoned or self.future.done():
            # Nobody awaits the lock that was gained: it goes back.
            if handle is not None:
                self.driver.release_in_background(handle)
            self.future.cancel()
        else:
            self.future.set_result((status, message, answer if self.query else handle))
        self.driver.after_run()


class _Driver:
    """The engine's driver for one client on one event loop: connections per
    node (idle ones pooled), the operations under way, the releases owed."""

    def __init__(self, ctx: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.ctx = ctx
        self.loop = loop
        self.n_nodes = capi.redlock_ctx_node_count(ctx)
        self.pool_size = int(capi.redlock_ctx_get_option(ctx, "pool_size"))
        self.idle: List[List[_Conn]] = [[] for _ in range(self.n_nodes)]
        self.by_ptr: Dict[int, _Conn] = {}
        self.runs: Set[_Run] = set()
        self.background: Set[asyncio.Task[Any]] = set()
        self.delivering = False
        self.deliver_timer: Optional[asyncio.TimerHandle] = None
        self.deliver_at = 0  # when deliver_timer is due (the engine's ms)
        self.closed = False
        # What the connections read into (through a view: a transport may
        # slice it), handed to the engine whole with the count read (the
        # stable ABI of 3.10 has no buffer protocol for a slice of it).
        self.buffer = bytearray(16384)
        self.view = memoryview(self.buffer)
        self.wakes = _Wakes(self)
        self.tls: Optional[ssl.SSLContext] = None  # made on first use, from the options
        self.tls_failure = ""
        self._renewer: Optional[_Renewer] = None  # made with the first kept lock

    def renewer(self) -> _Renewer:
        if self._renewer is None:
            self._renewer = _Renewer(self)
        return self._renewer

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.view

    # -- operations

    async def run(self, op: Any, cancellable: bool = False,
                  handle: Any = None, query: bool = False,
                  before_free: Optional[Callable[[Any], None]] = None) -> Tuple[int, str, Any]:
        """Drives op to its end; an unlock's handle is freed then. When the
        caller is cancelled, a lock gives up: what it took is released, and a
        lock it had gained already is unlocked. Other operations go on. A
        query's result is its answer (redlock_op_answer), not a handle."""
        run = _Run(self, op, handle, query)
        run.before_free = before_free
        self.runs.add(run)
        run.step()
        try:
            # Cancelling the caller cancels run.future, never the run.
            return await run.future
        except asyncio.CancelledError:
            if run.future.done() and not run.future.cancelled():
                gained = run.future.result()[2]
                if gained is not None:
                    self.release_in_background(gained)
            elif cancellable:
                run.abandoned = True
                if run.op is not None:
                    capi.redlock_op_cancel(run.op, _now())
                    run.step()
            raise

    def attach(self, run: _Run, node: int, now: int) -> None:
        """Gives run's operation a connection to node: an idle one, or a new
        one unless the engine says none may be made now (it then fails the
        node itself)."""
        fresh = capi.redlock_op_wants_fresh(run.op, node)
        conn = None if fresh else self._take_idle(run.op, node)
        if conn is not None:
            capi.redlock_op_attach(run.op, node, conn.conn, now)
        else:
            c = capi.redlock_op_connect(run.op, node, now)
            if c is None:
                return
            conn = self._connect(node, c)
        conn.run = run
        run.conns[node] = conn

    def _take_idle(self, op: Any, node: int) -> Optional[_Conn]:
        """The last idle connection to node that fits op (on a Cluster node:
        one to the master of its slot)."""
        pool = self.idle[node]
        for i in range(len(pool) - 1, -1, -1):
            conn = pool[i]
            if conn.freed or capi.redlock_conn_broken(conn.conn):
                del pool[i]
            elif not capi.redlock_conn_poolable(conn.conn):
                del pool[i]
                self.close(conn, "the node's master moved")   # a Sentinel node's
            elif capi.redlock_op_fits(op, node, conn.conn):
                del pool[i]
                return conn
        return None

    def _connect(self, node: int, c: Any) -> _Conn:
        conn = _Conn(self, node, c)
        self.by_ptr[int(conn.conn)] = conn
        conn.connecting = self.open(node, conn, c)
        return conn

    def open(self, node: int, protocol: Any, c: Any = None) -> asyncio.Task[Any]:
        """Connects protocol to node (over TLS for a rediss:// node: the
        protocol sees the connection once the handshake is done): the task
        that does it. When it fails, protocol.ended(why, tls) is called.
        With the engine's connection c, to where it goes (for a Sentinel
        node, its master or a sentinel); without, to the node's server now."""
        if c is not None:
            host = capi.redlock_conn_host(c)
            where = (host, capi.redlock_conn_port(c), capi.redlock_conn_server_name(c))
        else:
            host = capi.redlock_ctx_node_host(self.ctx, node)
            where = (host, capi.redlock_ctx_node_port(self.ctx, node),
                     capi.redlock_ctx_node_server_name(self.ctx, node))
        if host is not None:
            coro = self._connect_tcp(protocol, node, *where)
        else:
            coro = self.loop.create_unix_connection(lambda: protocol,
                                                    capi.redlock_ctx_node_path(self.ctx, node))
        task = self.loop.create_task(coro)

        def connected(task: asyncio.Task[Any]) -> None:
            protocol.connecting = None
            if not task.cancelled() and task.exception() is not None:
                protocol.ended(*_connect_failure(task.exception()))

        task.add_done_callback(connected)
        return task

    async def _connect_tcp(self, protocol: Any, node: int, host: str, port: int,
                           server_name: Optional[str]) -> Any:
        if not capi.redlock_ctx_node_tls(self.ctx, node):
            return await self.loop.create_connection(lambda: protocol, host, port)
        return await self.loop.create_connection(
            lambda: protocol, host, port, ssl=self._tls_context(), server_hostname=server_name)

    def _tls_context(self) -> ssl.SSLContext:
        """The client's TLS settings, from its options, made once; a setting
        that cannot be used raises _TLSFailure (again on every use)."""
        if self.tls is None and not self.tls_failure:
            try:
                self.tls = _tls_context(self.ctx)
            except _TLSFailure as failure:
                self.tls_failure = str(failure)
        if self.tls is None:
            raise _TLSFailure(self.tls_failure)
        return self.tls

    def give_back(self, node: int, c: Any) -> None:
        conn = self.by_ptr.get(int(c))
        if conn is None:
            return
        conn.run = None
        pool = self.idle[node]
        if (not self.closed and capi.redlock_conn_poolable(c) and conn.transport is not None
                and len(pool) < self.pool_size):
            pool.append(conn)
        else:
            self.close(conn, "closed by the client")

    def close(self, conn: _Conn, why: Optional[str], tls: bool = False) -> None:
        """Ends a connection: what it still owed is settled by the engine
        (why: how the socket ended, tls when TLS failed; None when the engine
        broke it). One that an operation still holds comes back through
        give_back."""
        if conn.freed:
            return
        if why is not None:
            (capi.redlock_conn_tls_failed if tls else capi.redlock_conn_lost)(conn.conn, why,
                                                                              _now())
            # What it still owed may be releases owed now: delivered in time.
            self.after_run()
        if capi.redlock_conn_held(conn.conn):
            return
        conn.run = None
        conn.freed = True
        self.by_ptr.pop(int(conn.conn), None)
        capi.redlock_conn_free(conn.conn)
        if conn.transport is not None:
            conn.transport.close()
        if conn.connecting is not None:
            conn.connecting.cancel()

    # -- releases owed, and handles given back

    def after_run(self) -> None:
        """Schedules the delivery of the releases owed, when the engine says
        (redlock_ctx_owed_at): after every run, and after each delivery."""
        if self.closed or self.delivering:
            return
        now = _now()
        at = capi.redlock_ctx_owed_at(self.ctx, now)
        if at >= _NEVER or (self.deliver_timer is not None and self.deliver_at <= at):
            return
        if self.deliver_timer is not None:
            self.deliver_timer.cancel()
        self.deliver_at = at
        self.deliver_timer = self.loop.call_later(max(0, at - now) / 1000, self._deliver)

    def _deliver(self) -> None:
        self.deliver_timer = None
        now = _now()
        if self.closed or capi.redlock_ctx_owed_at(self.ctx, now) > now:
            self.after_run()
            return
        self.delivering = True
        task = self.loop.create_task(self.run(capi.redlock_op_deliver(self.ctx, now)))
        self.background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.background.discard(t)
            self.delivering = False
            self.after_run()

        task.add_done_callback(done)

    def release_in_background(self, handle: Any) -> None:
        """Unlocks a handle nobody will use (a cancelled acquire's), then
        frees it."""
        if self.closed:
            capi.redlock_handle_free(handle)
            return
        try:
            op = capi.redlock_op_unlock(handle, _now())
        except LockError:
            capi.redlock_handle_free(handle)
            return

        async def release() -> None:
            await self.run(op, handle=handle)

        task = self.loop.create_task(release())
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def close_all(self) -> None:
        while self.background or self.runs:
            pending = list(self.background) + [run.future for run in self.runs]
            await asyncio.gather(*pending, return_exceptions=True)
        self.closed = True
        if self.deliver_timer is not None:
            self.deliver_timer.cancel()
        for pool in self.idle:
            for conn in pool:
                self.close(conn, "the client was closed")
            pool.clear()
        self.wakes.close()
        if self._renewer is not None:
            self._renewer.close()


class _Sub(asyncio.Protocol):
    """A subscriber connection to one node (the engine's redlock_sub): it
    hears the releases of the keys waited for, and passes what it hears to
    the client's _Wakes."""

    def __init__(self, wakes: _Wakes, node: int) -> None:
        self.wakes = wakes
        self.node = node
        self.sub = capi.redlock_sub_new(wakes.driver.ctx, node)
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
            broken = event < 0 or capi.redlock_waiters_event(
                waiters, self.node, event, capi.redlock_sub_channel(sub),
                capi.redlock_sub_text(sub)) != 0
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
        capi.redlock_sub_free(self.sub)


class _Wakes:
    """Waiting locks woken by releases (redlock_engine.h's wake-ups): the
    client's redlock_waiters, with the lock runs registered in it, and while
    any waits (and for a while after, as the library says) one subscriber
    connection per node. Who is woken when is the library's rule; this
    class moves bytes and keeps the connections as it says."""

    def __init__(self, driver: _Driver) -> None:
        self.driver = driver
        self.waiters = capi.redlock_waiters_new(driver.ctx)
        self.runs: Dict[int, _Run] = {}
        self.last_id = 0
        self.subs: List[Optional[_Sub]] = [None] * driver.n_nodes
        self.timer: Optional[asyncio.TimerHandle] = None  # when tend() is due again
        self.closed = False

    def add(self, run: _Run) -> None:
        """Registers a lock run that waits for a release of its keys; one
        the library cannot register keeps its timed retries only."""
        if self.closed:
            return
        self.last_id += 1
        if capi.redlock_waiters_add(self.waiters, self.last_id, run.op) == capi.REDLOCK_OK:
            run.wait_id = self.last_id
            self.runs[run.wait_id] = run
            self.tend()

    def remove(self, run: _Run, op: Any) -> None:
        """Ends the registration of a run whose op is done (its message
        says so if a node refused the subscription)."""
        capi.redlock_waiters_remove(self.waiters, run.wait_id, op, _now())
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
        capi.redlock_waiters_closed(self.waiters, sub.node, 1, _now())
        self.tend()

    def tend(self) -> None:
        """Makes the subscriber connections what the waiters need now: made
        when due, subscribed to what they wait for, closed once idle; and
        comes back when that changes with time."""
        if self.closed:
            return
        now = _now()
        idle_at = capi.redlock_waiters_idle_at(self.waiters)
        if now >= idle_at:
            self._close_subs(now)
            return
        next_at = idle_at
        for node, sub in enumerate(self.subs):
            if sub is None:
                if idle_at < _NEVER:
                    continue  # nobody waits: none is made
                at = capi.redlock_waiters_connect_at(self.waiters, node)
                if now >= at:
                    sub = self.subs[node] = _Sub(self, node)
                    sub.connecting = self.driver.open(node, sub)
                else:
                    next_at = min(next_at, at)
            elif sub.transport is not None:
                capi.redlock_waiters_match(self.waiters, node, sub.sub)
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
                capi.redlock_waiters_closed(self.waiters, node, 0, now)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def close(self) -> None:
        """The client is closed (no run is left): the connections go."""
        if not self.closed:
            self._close_subs(_now())
            self.closed = True
            capi.redlock_waiters_free(self.waiters)


class _TLSFailure(Exception):
    """The client's TLS settings cannot be made (a file of the options)."""


def _tls_context(ctx: Any) -> ssl.SSLContext:
    """An SSLContext with the settings the C library's own TLS takes from
    the tls_* options (redlock_ctx_tls_*): they are the library's, only
    applied here to Python's ssl."""
    if capi.redlock_ctx_tls_check(ctx) != capi.REDLOCK_OK:
        raise _TLSFailure(capi.redlock_errmsg())
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion(capi.redlock_ctx_tls_min_version(ctx))
    ca_file, ca_dir = capi.redlock_ctx_tls_ca_file(ctx), capi.redlock_ctx_tls_ca_dir(ctx)
    cert, key = capi.redlock_ctx_tls_cert_file(ctx), capi.redlock_ctx_tls_key_file(ctx)
    what = ""
    try:
        if not capi.redlock_ctx_tls_verify(ctx):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif ca_file or ca_dir:
            what = "tls_ca_file" if ca_file else "tls_ca_dir"
            context.load_verify_locations(cafile=ca_file, capath=ca_dir)
        else:
            what = "the system's CA certificates"
            context.set_default_verify_paths()
        if cert:
            what = "tls_cert_file"
            # No passphrase: OpenSSL would otherwise ask the terminal for one.
            context.load_cert_chain(cert, key, password=lambda: b"")
    except ssl.SSLError as error:
        raise _TLSFailure(f"{what}: cannot load the certificates or key "
                          f"({error.reason or error})") from None
    return context


def _connect_failure(error: BaseException) -> Tuple[str, bool]:
    """Why a connect failed, and whether it is TLS's failure."""
    if isinstance(error, _TLSFailure):
        return str(error), True
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS certificate check failed: {error.verify_message}", True
    if isinstance(error, ssl.SSLError):
        return f"TLS handshake failed: {error.reason or error}", True
    return f"cannot connect: {error}", False


def _check_status(status: int, message: str) -> None:
    if status != capi.REDLOCK_OK:
        raise error_for(status, message)


class _Keeper:
    """The renewal of one kept acquisition, on its client's _Renewer. When
    to extend and when the lock is lost are the C library's rules, the same
    as its own renewal's (redlock_keep: a third of the lease after each
    success, a little sooner so that locks taken together spread out, again
    after a pause while validity lasts when the nodes fail, lost when a
    quorum says it is not ours or when validity runs out first, even with an
    extension under way), and so are the events renewal_failed and lost.
    stop() ends it after the extension under way, if any, so that no
    extension follows the release."""

    def __init__(self, lock: Lock, driver: _Driver, handle: Any) -> None:
        self.lock = lock
        self.handle = handle
        self.lease_ms = 0  # set by Lock.extend; the renewals use the handle's
        self.error: Optional[LockError] = None
        # Its result: the error when lost, None when stopped first.
        self.ended: asyncio.Future[Optional[LockError]] = driver.loop.create_future()
        self.keep: Any = capi.redlock_keep_new(handle, _now())
        self.extending = False   # in a renewal under way
        self.stopped = False
        self.due = 0             # the number of its live entry in the renewer's heap
        # Done once it is stopped and no extension is under way.
        self.idle: asyncio.Future[None] = driver.loop.create_future()
        self.renewer = driver.renewer()
        self.renewer.add(self, _now())

    def stop(self) -> asyncio.Future[None]:
        """Ends the renewal; the future is done once no extension is under way."""
        self.stopped = True
        if not self.ended.done():
            self.ended.set_result(None)
        if not self.extending:
            self._free()
        return self.idle

    def _free(self) -> None:
        if self.keep is not None:
            capi.redlock_keep_free(self.keep)
            self.keep = None
        if not self.idle.done():
            self.idle.set_result(None)

    def _lose(self, error: LockError) -> None:
        if self.stopped or self.ended.done():
            return
        self.error = error
        self.ended.set_result(error)
        self.lock._tell_lost(error)


class _Renewer:
    """The renewal of a client's kept locks on the loop: one timer for all
    of them, over a heap of when each must be looked at. The locks whose
    keeps ask for an extension (a keep asks a little early, so that those
    due together go together) are renewed in batches (redlock_renewal: one
    command per node for up to 500 locks), each lock still decided on its
    own; the keeps are told each lock's outcome and say what follows."""

    def __init__(self, driver: _Driver) -> None:
        self.driver = driver
        self.heap: List[Tuple[int, int, _Keeper]] = []
        self.seq = 0
        self.timer: Optional[asyncio.TimerHandle] = None
        self.timer_at = _NEVER
        self.renewals: Set[asyncio.Task[None]] = set()
        # Renewals made, waiting their turn: as many run at once as a node's
        # pool keeps connections, so that they run on pooled connections
        # rather than each wave opening (and handshaking) new ones.
        self.waiting: List[Tuple[Any, List[_Keeper]]] = []
        self.places = max(1, driver.pool_size)

    def add(self, keeper: _Keeper, at: int) -> None:
        """Looks at keeper again at `at`."""
        self.seq += 1
        keeper.due = self.seq   # its entries before this one are stale
        heapq.heappush(self.heap, (at, self.seq, keeper))
        if at < self.timer_at:
            if self.timer is not None:
                self.timer.cancel()
            self.timer_at = at
            self.timer = self.driver.loop.call_later(max(0, at - _now()) / 1000, self._tick)

    def _tick(self) -> None:
        self.timer, self.timer_at = None, _NEVER
        now = _now()
        renewal: Any = None
        batch: List[_Keeper] = []
        heap = self.heap
        while heap and heap[0][0] <= now:
            _, seq, keeper = heapq.heappop(heap)
            if keeper.due != seq or keeper.keep is None or keeper.stopped \
                    or keeper.error is not None:
                continue  # looked at since, or no more kept
            what, next_at = capi.redlock_keep_next(keeper.keep, now)
            if what == capi.REDLOCK_KEEP_LOST:
                keeper._lose(error_for(capi.redlock_keep_status(keeper.keep),
                                       capi.redlock_keep_message(keeper.keep)))
                if not keeper.extending:
                    keeper._free()
                continue
            if what == capi.REDLOCK_KEEP_EXTEND:
                if renewal is None:
                    renewal = capi.redlock_renewal_new()
                if capi.redlock_renewal_add(renewal, keeper.keep) == capi.REDLOCK_RENEWAL_FULL:
                    self._start(renewal, batch, now)
                    renewal, batch = capi.redlock_renewal_new(), []
                    capi.redlock_renewal_add(renewal, keeper.keep)
                batch.append(keeper)
                keeper.extending = True
            # Extending, it is looked at again when validity runs out.
            self.add(keeper, next_at)
        if renewal is not None:
            self._start(renewal, batch, now)
        # The first entry may be older than the ones looked at: the timer
        # is for it.
        if heap and heap[0][0] < self.timer_at:
            if self.timer is not None:
                self.timer.cancel()
            self.timer_at = heap[0][0]
            self.timer = self.driver.loop.call_later(max(0, self.timer_at - now) / 1000,
                                                     self._tick)

    def _start(self, renewal: Any, batch: List[_Keeper], now: int) -> None:
        if len(self.renewals) >= self.places:
            self.waiting.append((renewal, batch))
            return
        try:
            op = capi.redlock_renewal_start(renewal, now)
        except LockError:
            op = None  # each keep was told already
        if op is None:
            capi.redlock_renewal_free(renewal)
            self._ended(batch)
            return
        task = self.driver.loop.create_task(self._run(renewal, op, batch))
        self.renewals.add(task)
        task.add_done_callback(self._run_ended)

    def _run_ended(self, task: asyncio.Task[None]) -> None:
        self.renewals.discard(task)
        if self.waiting:
            renewal, batch = self.waiting.pop(0)
            self._start(renewal, batch, _now())

    async def _run(self, renewal: Any, op: Any, batch: List[_Keeper]) -> None:
        def tell(done_op: Any) -> None:
            capi.redlock_renewal_ended(renewal, done_op, _now())
        try:
            await self.driver.run(op, before_free=tell)
        finally:
            capi.redlock_renewal_free(renewal)
            self._ended(batch)

    def _ended(self, batch: List[_Keeper]) -> None:
        """A renewal ended: each of its keepers is looked at again now."""
        now = _now()
        for keeper in batch:
            keeper.extending = False
            if keeper.stopped or keeper.error is not None:
                keeper._free()
            else:
                self.add(keeper, now)

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.timer_at = _NEVER


class Redlock(_ClientFront):
    """A client for N independent Redis masters, for asyncio: the same
    nodes and options as redlock.Redlock. Nothing connects until the first
    lock call; ``await client.close()`` (or leaving ``async with``) releases
    the locks still held and closes the connections.

    The rules are the sync client's (docs/locks.md): an RLock acquired again
    by the task holding it counts a hold and keeps the first terms;
    ``lock.lost`` is True whenever the keys can have expired while held;
    ``client.lock()`` and ``async with lock:`` wait until acquired,
    ``try_lock()`` with no wait makes one attempt; a multi-lock is locked
    when any of its resources is, for the longest of their times to live."""

    def __init__(self, nodes: Sequence[str], **options: OptionValue) -> None:
        ctx = self._setup(nodes, options)
        self._driver: Optional[_Driver] = None
        self._live: Set[Lock] = set()
        self._closed = False
        # The state get_rlock() objects of one name share, while any is alive.
        self._rlocks: weakref.WeakValueDictionary[str, _Reentrant[Lock]] = \
            weakref.WeakValueDictionary()
        self._finalizer = weakref.finalize(self, capi.redlock_ctx_free, ctx)

    def get_lock(self, name: str) -> Lock:
        """A lock on one resource (not acquired yet)."""
        self._check_open()
        return Lock(self, _names(name))

    def get_multi_lock(self, *names: str) -> Lock:
        """A lock on several resources, acquired all together or not at all."""
        self._check_open()
        return Lock(self, _names(*names))

    def get_rlock(self, name: str) -> RLock:
        """A reentrant lock on one resource, owned by the task that acquires
        it: that task may acquire it again (through this object or any other
        get_rlock() of the name from this client), which counts a hold and
        keeps the first terms, and holds it until it has released it as many
        times (redlock.Redlock.get_rlock, with tasks for threads)."""
        self._check_open()
        _check_name(name)
        shared = self._rlocks.get(name)
        if shared is None:
            shared = self._rlocks[name] = _Reentrant(Lock(self, (name,)))
        return RLock(shared)

    def get_read_write_lock(self, name: str) -> ReadWriteLock:
        """A read-write lock (redlock.Redlock.get_read_write_lock)."""
        self._check_open()
        return ReadWriteLock(self, _check_name(name))

    def get_semaphore(self, name: str, permits: int) -> Semaphore:
        """A semaphore of ``permits`` permits (redlock.Redlock.get_semaphore)."""
        self._check_open()
        return Semaphore(self, name, permits)

    def get_fair_lock(self, name: str) -> Lock:
        """A fair lock on one resource (redlock.Redlock.get_fair_lock): its
        waiters, tasks and other clients, get it in the order they arrived;
        otherwise a Lock of this module."""
        self._check_open()
        return _FairLock(self, _names(name))

    def synchronize(self, name: str, wait: Optional[float] = None, lease: Optional[float] = None,
                    fair: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator of coroutine functions: each call runs under the lock
        ``name``, as ``async with client.lock(name, lease=lease, wait=wait):``,
        or with ``fair=True`` under its fair lock (redlock.Redlock.synchronize's
        rules). For plain functions, use redlock.Redlock's."""
        if not _check_name(name):
            raise InvalidArgument(capi.REDLOCK_EINVAL, "synchronize: the lock name is empty")
        _wait_ms(wait)
        self._check_open()
        get = self.get_fair_lock if fair else self.get_lock

        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            if not inspect.iscoroutinefunction(function):
                raise TypeError(f"synchronize: {function.__qualname__} is not a coroutine "
                                "function; decorate it with redlock.Redlock.synchronize")

            @functools.wraps(function)
            async def run(*args: Any, **kwargs: Any) -> Any:
                async with self._scoped(get, name, lease, wait):
                    return await function(*args, **kwargs)
            return run
        return decorate

    def lock(self, name: str, lease: Optional[float] = None,
             wait: Optional[float] = None) -> AsyncContextManager[Lock]:
        """``async with client.lock(name, lease=..., wait=...) as lock:`` runs
        the block under the lock and releases it after (kept until then
        without a lease); without a wait it waits until acquired. Raises as
        the sync client's ``lock()`` does."""
        return self._scoped(self.get_lock, name, lease, wait)

    @asynccontextmanager
    async def _scoped(self, get: Callable[[str], Lock], name: str, lease: Optional[float],
                      wait: Optional[float]) -> AsyncIterator[Lock]:
        """lock()'s block, under the lock get(name) makes: get_lock's, or
        get_fair_lock's (synchronize(fair=True))."""
        lock = get(name)
        await lock._acquire(_wait_ms(wait), *lock._lease(lease))
        try:
            yield lock
        except BaseException:
            await lock._discard()
            raise
        await lock.unlock()

    def health(self) -> List[Dict[str, Any]]:
        """What the client knows of each node (redlock.Redlock.health): no
        I/O, hence not awaited."""
        return super().health()

    async def ping(self) -> int:
        """redlock.Redlock.ping on the loop: PING to every node at once, the
        number that answered and count; NoQuorum when fewer than a quorum."""
        driver = self._drive()
        status, message, answer = await driver.run(capi.redlock_op_ping(driver.ctx, _now()),
                                                   query=True)
        _check_status(status, message)
        return int(answer[2])

    async def close(self) -> None:
        """Releases the locks still held (best effort), waits for the calls
        under way, and closes the connections. Calling it again does nothing."""
        if self._closed:
            return
        for lock in list(self._live):
            await lock._discard()
        self._closed = True
        if self._driver is not None:
            await self._driver.close_all()
        self._finalizer()

    async def __aenter__(self) -> Redlock:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed()

    def _context(self) -> Any:
        self._check_open()
        return self._ctx

    def _drive(self) -> _Driver:
        self._check_open()
        loop = asyncio.get_running_loop()
        if self._driver is None:
            self._driver = _Driver(self._ctx, loop)
        elif self._driver.loop is not loop:
            raise RuntimeError("this Redlock client belongs to another event loop")
        return self._driver


class Lock(_LockFront):
    """A distributed lock on one or more resources, from Redlock.get_lock()
    or Redlock.get_multi_lock(): redlock.Lock's methods, awaited. Times are
    seconds. One acquisition at a time per object; not reentrant (get_rlock()
    gives a reentrant one). Without a lease a lock is kept (renewed by a task
    on the loop) until released."""

    _LABEL = "redlock.asyncio.Lock"
    _client: Redlock

    def __init__(self, client: Redlock, names: Tuple[str, ...]) -> None:
        super().__init__(client, names)
        self._handle: Any = None
        self._keeper: Optional[_Keeper] = None  # while kept
        self._last_keeper: Optional[_Keeper] = None  # the latest acquisition's, if kept
        self._was_lost = False  # whether the latest acquisition, released, had been lost

    async def try_lock(self, wait: float = 0.0, lease: Optional[float] = None) -> bool:
        """Tries to acquire the lock for ``lease`` seconds (None: kept until
        released), retrying for up to ``wait`` seconds (0, the default: one
        attempt). True when acquired, False when held by someone else all
        along; failures (NoQuorum among them) raise, as in redlock.Lock."""
        wait_ms = _millis(wait, "wait")
        try:
            await self._acquire(wait_ms, *self._lease(lease))
        except LockNotAcquired:
            return False
        return True

    async def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """asyncio.Lock.acquire with redlock.Lock.acquire's arguments: waits
        up to ``timeout`` seconds (-1: until acquired; ``blocking=False``:
        one attempt), kept until released."""
        wait_ms = _acquire_wait_ms(blocking, timeout)
        try:
            await self._acquire(wait_ms, *self._lease(None))
        except LockNotAcquired:
            return False
        return True

    async def unlock(self) -> None:
        """Releases the lock on the nodes. Raises LockNotHeld when it was not
        held, or had expired or been lost. A cancelled unlock still releases."""
        self._client._check_open()
        driver = self._client._drive() if self._handle is not None else None
        self._was_lost = self.lost
        handle, self._handle = self._handle, None
        if handle is None or driver is None:
            raise LockNotHeld(capi.REDLOCK_ENOTHELD, "the lock is not held")
        self._client._live.discard(self)
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            # No extension may follow the release: the one under way ends first.
            renewal = keeper.stop()
            try:
                await asyncio.shield(renewal)
            except asyncio.CancelledError:
                renewal.add_done_callback(lambda _: driver.release_in_background(handle))
                raise
        try:
            op = capi.redlock_op_unlock(handle, _now())
        except BaseException:
            capi.redlock_handle_free(handle)
            raise
        # The C library tells, once the release started, whether the keys
        # could have expired before it.
        self._was_lost = self._was_lost or capi.redlock_handle_lost(handle) == 1
        # Cancelled, the release goes on to its end all the same.
        status, message, _ = await driver.run(op, handle=handle)
        _check_status(status, message)

    release = unlock

    async def extend(self, lease: float) -> None:
        """Renews the lease to ``lease`` seconds from now. Raises LockNotHeld
        when the lock has expired, was lost or released."""
        lease_ms = _lease_ms(lease)
        self._client._check_open()
        if self._handle is None:
            raise LockNotHeld(capi.REDLOCK_ENOTHELD, "the lock is not held")
        op = capi.redlock_op_extend(self._handle, lease_ms, _now())
        status, message, _ = await self._client._drive().run(op)
        _check_status(status, message)
        if self._keeper is not None:
            self._keeper.lease_ms = lease_ms  # the renewals' lease from now on

    @property
    def validity(self) -> float:
        """Seconds of validity left; <= 0 when not held or lost."""
        if self._handle is None or self.lost:
            return 0.0
        return capi.redlock_handle_validity_ms(self._handle) / 1000

    @property
    def lost(self) -> bool:
        """Whether the latest acquisition was lost: its keys can have expired
        while it was held (a kept lock's renewal failed for good, or the
        validity of any acquisition ran out before its release); False again
        once the lock is acquired anew."""
        handle = self._handle
        if handle is None:
            return self._was_lost
        keeper = self._keeper
        return (keeper is not None and keeper.error is not None) \
            or capi.redlock_handle_lost(handle) == 1

    def on_lost(self, callback: Callable[[Lock, LockError], Any]) -> None:
        """Calls ``callback(lock, error)`` on the loop when a kept
        acquisition of this lock is lost, for this and every later one; at
        once, here, when the current acquisition is lost already. An
        exception it raises goes to the loop's exception handler. A lock with
        a lease has no renewal to fail: ``lost`` tells when its lease ran
        out."""
        super().on_lost(callback)

    async def wait_lost(self) -> Optional[LockError]:
        """Waits until the current kept acquisition is lost, and returns why
        (LockNotHeld or LockExpired); None once it is released first, and at
        once when the lock is not held or has a lease."""
        keeper = self._keeper
        if keeper is None:
            return None
        return await asyncio.shield(keeper.ended)

    @property
    def token(self) -> Optional[str]:
        """The random token of the current acquisition, None when released."""
        return None if self._handle is None else capi.redlock_handle_token(self._handle)

    async def locked(self) -> bool:
        """Whether the lock is held, by anyone: asks the nodes, as redis-py's
        asyncio Lock.locked() does (redlock.Lock.locked: a multi-lock is
        locked when any of its resources is). is_held() is this object's own
        hold."""
        return await self._inspect_all() != -2

    async def remain_time_to_live(self) -> Optional[float]:
        """redlock.Lock.remain_time_to_live: seconds a quorum still has the
        lock, whoever holds it; None when nobody does, math.inf without
        expiry; for a multi-lock the longest of its locked resources'."""
        return _time_to_live(await self._inspect_all())

    async def force_unlock(self) -> bool:
        """redlock.Lock.force_unlock: deletes the lock on every node whatever
        its token (dangerous: read it there). True when a lock was deleted."""
        deleted = [(await self._inspect(name, True))[2] for name in self._names]
        return sum(deleted) > 0

    async def _inspect_all(self) -> int:
        """The lock's answer as redlock_inspect_multi gives it (its ttl_ms,
        -2 when not locked), merged by the C library's rule from one query
        per resource on the loop."""
        answer = -2
        for name in self._names:
            locked, ttl_ms, _ = await self._inspect(name, False)
            answer = capi.redlock_inspect_merge(answer, ttl_ms if locked else -2)
        return answer

    async def _inspect(self, name: str, force: bool) -> Tuple[int, int, int]:
        """Asks the nodes about name, or forces it open: (locked, ttl_ms,
        deleted), as the engine's redlock_op_answer."""
        driver = self._client._drive()
        make = capi.redlock_op_force_unlock if force else capi.redlock_op_inspect
        status, message, answer = await driver.run(make(driver.ctx, name, _now()), query=True)
        _check_status(status, message)
        locked, ttl_ms, deleted = answer
        return locked, ttl_ms, deleted

    async def __aenter__(self) -> Lock:
        await self.acquire()
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        if exc_type is None:
            await self.unlock()
        else:
            await self._discard()

    def _current_handle(self) -> Any:
        return self._handle

    def _lost_now(self) -> Optional[LockError]:
        keeper = self._keeper
        return None if keeper is None else keeper.error

    async def _acquire(self, wait_ms: Optional[int], lease_ms: int, keep: bool) -> None:
        driver = self._client._drive()
        wait = _FOREVER_MS if wait_ms is None else wait_ms
        op = self._op(driver, lease_ms, wait)
        status, message, handle = await driver.run(op, cancellable=True)
        _check_status(status, message)
        old, self._handle = self._handle, handle
        self._was_lost = False
        old_keeper = self._keeper
        self._keeper = self._last_keeper = _Keeper(self, driver, handle) if keep else None
        self._client._live.add(self)
        if old is not None:
            # The lease of the previous acquisition had run out (or it was lost).
            if old_keeper is not None:
                old_keeper.stop().add_done_callback(
                    lambda _: driver.release_in_background(old))
            else:
                driver.release_in_background(old)

    def _op(self, driver: _Driver, lease_ms: int, wait_ms: int) -> Any:
        return capi.redlock_op_lock(driver.ctx, self._names, lease_ms, wait_ms, _now())

    def _tell_lost(self, error: LockError) -> None:
        for exc in self._run_callbacks(error):
            asyncio.get_running_loop().call_exception_handler({
                "message": "an on_lost callback of a redlock.asyncio.Lock raised",
                "exception": exc, "lock": self})

    async def _discard(self) -> None:
        """Unlocks, ignoring failures."""
        try:
            await self.unlock()
        except LockError:
            pass


class _FairLock(Lock):
    """A fair lock for asyncio (Redlock.get_fair_lock): a Lock taken with
    the engine's redlock_op_lock_fair. A paused waiter is woken on its own
    channel, which the op names to the client's waiters as any lock's."""

    _KIND = " (fair)"

    def _op(self, driver: _Driver, lease_ms: int, wait_ms: int) -> Any:
        return capi.redlock_op_lock_fair(driver.ctx, self._names[0], lease_ms, wait_ms, _now())


class ReadWriteLock(_ReadWriteFront[Lock]):
    """A read-write lock for asyncio, from Redlock.get_read_write_lock():
    redlock.ReadWriteLock's rules (readers together, one writer alone, a
    downgrade from its own write lock, no upgrade), each half a Lock of this
    module."""

    def __init__(self, client: Redlock, name: str) -> None:
        super().__init__(_ReadWriteHalf(self, client, name, capi.REDLOCK_READ),
                         _ReadWriteHalf(self, client, name, capi.REDLOCK_WRITE))


class _ReadWriteHalf(Lock):
    """The read or the write lock of a ReadWriteLock. The loop runs one
    task at a time: the other half's handle stays valid while the operation
    is made."""

    def __init__(self, pair: ReadWriteLock, client: Redlock, name: str, mode: int) -> None:
        super().__init__(client, (name,))
        self._pair = pair
        self._mode = mode

    def _op(self, driver: _Driver, lease_ms: int, wait_ms: int) -> Any:
        held = self._pair._other(self._mode)._current_handle()
        return capi.redlock_op_lock_rw(driver.ctx, self._names[0], self._mode, held, lease_ms,
                                       wait_ms, _now())

    def __repr__(self) -> str:
        return _half_repr(self, self._mode)


class Semaphore(_SemaphoreFront):
    """A semaphore for asyncio, from Redlock.get_semaphore(name, permits):
    redlock.Semaphore's rules (at most ``permits`` permits held at once,
    each with its own id and lease, kept when no lease is given; the same
    number of permits from every client), its methods awaited."""

    _LABEL = "redlock.asyncio.Semaphore"
    _client: Redlock

    async def try_acquire(self, wait: float = 0.0,
                          lease: Optional[float] = None) -> Optional[Permit]:
        """Tries to take a permit for ``lease`` seconds (None: kept until
        released), retrying for up to ``wait`` seconds (0: one attempt). The
        Permit, or None when every permit stayed taken; other failures
        raise, as in redlock.Semaphore."""
        permit = Permit(self)
        # Lock's try_lock, which a Permit refuses to its users.
        return permit if await Lock.try_lock(permit, wait, lease) else None

    async def acquire(self, lease: Optional[float] = None) -> Permit:
        """Takes a permit for ``lease`` seconds (None: kept until released),
        waiting as long as it takes."""
        permit = Permit(self)
        await permit._acquire(None, *permit._lease(lease))
        return permit

    @asynccontextmanager
    async def permit(self, wait: Optional[float] = None,
                     lease: Optional[float] = None) -> AsyncIterator[Permit]:
        """``async with semaphore.permit(wait=..., lease=...) as permit:``
        runs the block with a permit and releases it after; raises as
        redlock.Semaphore.permit does."""
        permit = Permit(self)
        await permit._acquire(_wait_ms(wait), *permit._lease(lease))
        async with permit:
            yield permit

    async def available_permits(self) -> int:
        """How many permits could be taken now (redlock.Semaphore's)."""
        driver = self._client._drive()
        op = capi.redlock_op_permits(driver.ctx, self._name, self._permits, _now())
        available: List[int] = []
        status, message, _ = await driver.run(
            op, before_free=lambda done: available.append(capi.redlock_op_available(done)))
        _check_status(status, message)
        return available[0]


class Permit(_PermitFront, Lock):
    """A permit of a Semaphore for asyncio, from its try_acquire(),
    acquire() or permit(): a Lock of this module taken once (release,
    extend, validity, lost, on_lost, wait_lost, ``async with``: leaving the
    block releases it), with ``id``, its token. Without a lease it is kept
    (renewed by a task on the loop) until released."""

    _LABEL = "redlock.asyncio.Permit"
    _semaphore: Semaphore

    async def __aenter__(self) -> Permit:
        """The permit is held already: ``async with`` only releases it on
        leaving."""
        return self

    def _op(self, driver: _Driver, lease_ms: int, wait_ms: int) -> Any:
        return capi.redlock_op_acquire_permit(driver.ctx, self._names[0],
                                              self._semaphore.permits, lease_ms, wait_ms, _now())

    async def _acquire(self, wait_ms: Optional[int], lease_ms: int, keep: bool) -> None:
        await super()._acquire(wait_ms, lease_ms, keep)
        self._id = self.token


class RLock:
    """A reentrant distributed lock for asyncio, from Redlock.get_rlock():
    owned by the task that acquires it. The first acquisition by a task takes
    the lock on the nodes (kept until released when no lease is given);
    later ones by the same task only count a hold and keep the first terms
    (the keys' TTL and the renewal are not changed), and the last release
    unlocks it on the nodes. Acquiring again after the hold was lost (its
    lease ran out, its renewal failed) starts afresh: a new acquisition,
    whose holds count from 1; until it succeeds, ``lock.lost`` and the
    release (LockNotHeld) tell the loss."""

    def __init__(self, shared: _Reentrant[Lock]) -> None:
        self._shared = shared

    @property
    def lock(self) -> Lock:
        """The underlying Lock (lost, on_lost, validity, token)."""
        return self._shared.lock

    async def try_lock(self, wait: float = 0.0, lease: Optional[float] = None) -> bool:
        """As Lock.try_lock; True at once when this task holds it already
        (its lease and renewal stay what the first acquisition made them)."""
        _millis(wait, "wait")
        self._shared.lock._lease(lease)
        if self._shared.reenter(_task()):
            return True
        return self._first(await self._shared.lock.try_lock(wait, lease))

    async def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Lock.acquire for the lock on the nodes (until acquired by default);
        True at once when this task holds it already."""
        _acquire_wait_ms(blocking, timeout)
        if self._shared.reenter(_task()):
            return True
        return self._first(await self._shared.lock.acquire(blocking, timeout))

    async def release(self) -> None:
        """Counts one release; the last one unlocks on the nodes (raising
        LockNotHeld, as Lock.unlock does, if the lock had been lost).
        RuntimeError when this task does not hold it."""
        if self._shared.leave(_task()):
            await self._shared.lock.unlock()

    unlock = release

    def get_hold_count(self) -> int:
        """How many times the current task holds it (0: not at all)."""
        return self._shared.holds(_task())

    def is_held_by_current_task(self) -> bool:
        return self.get_hold_count() > 0

    async def locked(self) -> bool:
        """Whether the lock is held, by anyone: asks the nodes (Lock.locked)."""
        return await self._shared.lock.locked()

    async def remain_time_to_live(self) -> Optional[float]:
        """Lock.remain_time_to_live: the lock's time left on the nodes."""
        return await self._shared.lock.remain_time_to_live()

    async def force_unlock(self) -> bool:
        """Lock.force_unlock (dangerous). A task's holds still count; its last
        release finds the lock gone and raises LockNotHeld."""
        return await self._shared.lock.force_unlock()

    async def __aenter__(self) -> RLock:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()

    def __repr__(self) -> str:
        return (f"<redlock.asyncio.RLock {self._shared.lock.names[0]!r} held "
                f"{self.get_hold_count()} times>")

    def _first(self, acquired: bool) -> bool:
        if acquired:
            self._shared.first(_task())
        return acquired


def _task() -> asyncio.Task[Any]:
    """The owner of an RLock's holds: the current task."""
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("a redlock.asyncio.RLock is used from a task")
    return task
