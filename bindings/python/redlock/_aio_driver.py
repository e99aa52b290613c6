"""redlock.asyncio's driver of the C library's I/O-free engine: the engine
decides everything (votes, retries, pauses, what a late reply means); the
driver only moves its bytes over the running loop's own connections (asyncio
protocols), and wakes it when it asked to be woken. No thread is used and no
call blocks the loop. One _Driver per client and loop: its connections per
node (idle ones pooled), the operations under way (_Run), the releases owed;
it owns the client's wake-ups (_aio_wakes) and renewals (_aio_keeper)."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import _capi
from ._aio_base import (_AWAITS, _BROKEN, _CONNECT, _DONE, _EOF, _NEVER, _NOTHING, _READ,
                        _REUSE_ATTACHED, _REUSE_BROKEN, _REUSE_FRESH, _REUSE_IDLE, _REUSE_MOVED,
                        _TAIL, _WRITE, _conn_read, _conn_send, _now, _op_drive, _op_next_wanted,
                        _op_react, _op_reuse, _output, _received, _wrote)
from ._aio_keeper import _Renewer
from ._aio_tls import _connect_failure, _tls_context, _TLSFailure
from ._aio_wakes import _Wakes
from .errors import LockError


class _Conn(asyncio.BufferedProtocol):
    """One connection to a node: the engine's redlock_conn, fed by the
    loop's transport. The engine knows, for every byte, which command it
    belongs to; this class only carries bytes and events."""

    def __init__(self, driver: _Driver, node: int, conn: Any) -> None:
        self.driver = driver
        self.node = node
        self.conn = conn
        self.tls = bool(_capi.redlock_ctx_node_tls(driver.ctx, node))
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
        _capi.redlock_conn_connected(self.conn, _now())
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

    def shut(self) -> None:
        """Closes the socket (the driver freed the connection)."""
        if self.transport is not None:
            self.transport.close()


class _RawConn(_Conn):
    """A connection without TLS: a non-blocking socket of its own (its
    transport) watched by the loop, whose bytes the C library reads and
    writes in one call each way (redlock_py_conn_read, _send), with no
    Python object per read or write. Otherwise a _Conn."""

    def __init__(self, driver: _Driver, node: int, conn: Any) -> None:
        super().__init__(driver, node, conn)
        self.fd = -1
        self.writing = False  # waits for the socket to take the rest

    def made(self, sock: socket.socket) -> None:
        """Connected: the loop watches the socket from here on."""
        if self.freed:
            sock.close()
            return
        self.transport = sock  # type: ignore[assignment]
        self.fd = sock.fileno()
        self.driver.loop.add_reader(self.fd, self.readable)
        _capi.redlock_conn_connected(self.conn, _now())
        self.event()

    def readable(self) -> None:
        if self.freed:
            return
        now = _now()
        got = _conn_read(self.conn, self.fd, now)
        if got == _READ:
            run = self.run
            if run is not None and run.waiting is not None:
                # Most replies change nothing the run waits for (a vote
                # before the quorum): the engine says so in one call.
                if _op_react(run.op, self.conn, now, run.waiting):
                    run.step()
                return
            self.flush()
            if run is not None:
                run.step()
        elif got == _BROKEN:
            run = self.run
            self.driver.close(self, None)
            if run is not None:
                run.step()
        elif got != _NOTHING:
            self.lost(None if got == _EOF else OSError(-got, os.strerror(-got)))

    def flush(self) -> None:
        if self.freed or self.transport is None or self.writing:
            return
        sent = _conn_send(self.conn, self.fd)
        if sent == 1:
            self.writing = True
            self.driver.loop.add_writer(self.fd, self.writable)
        elif sent < 0:
            # As a transport does: the loss is told from the loop, not
            # from within the step that wrote.
            self.driver.loop.call_soon(self.lost, OSError(-sent, os.strerror(-sent)))

    def writable(self) -> None:
        sent = _conn_send(self.conn, self.fd) if not self.freed else 0
        if sent != 1:
            self.writing = False
            self.driver.loop.remove_writer(self.fd)
        if sent < 0:
            self.lost(OSError(-sent, os.strerror(-sent)))

    def lost(self, exc: Optional[Exception]) -> None:
        """The socket failed or the node closed it (exc None)."""
        if self.transport is None:
            return
        self.shut()
        self.connection_lost(exc)

    def shut(self) -> None:
        sock, self.transport = self.transport, None
        if sock is not None:
            loop = self.driver.loop
            loop.remove_reader(self.fd)
            if self.writing:
                self.writing = False
                loop.remove_writer(self.fd)
            sock.close()


class _Run:
    """One engine operation driven to its end by the loop's callbacks. The
    caller awaits `future`: (status, message, handle)."""

    def __init__(self, driver: _Driver, op: Any, handle: Any, query: bool = False) -> None:
        self.driver = driver
        self.op = op
        self.handle = handle  # an unlock's handle, freed when the run ends
        self.query = query    # an inspect or force unlock: its answer is the result
        self.conns: Dict[int, _Conn] = {}
        self.timer_at = _NEVER  # when the driver's timer steps it (the engine's ms)
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
                conn.flush()
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
        self.timer_at = at
        if at < _NEVER:
            self.driver.wake_at(at, now)

    def woken(self) -> None:
        """A release of its keys: the pause ends, and a new attempt starts."""
        if self.op is not None:
            _capi.redlock_op_wake(self.op, _now())
            self.step()

    def _finish(self, now: int) -> None:
        self.timer_at = _NEVER
        op, self.op = self.op, None
        if self.wait_id:
            self.driver.wakes.remove(self, op)
        status = _capi.redlock_op_status(op)
        message = _capi.redlock_op_message(op)
        handle = _capi.redlock_op_take_handle(op)
        answer = tuple(_capi.redlock_op_answer(op)) if self.query else None
        for address in _capi.redlock_py_op_conns(op):
            self.driver.give_back(address)
        if self.before_free is not None:
            self.before_free(op)
        _capi.redlock_op_free(op)
        if self.handle is not None:
            _capi.redlock_handle_free(self.handle)
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
        self.n_nodes = _capi.redlock_ctx_node_count(ctx)
        self.pool_size = int(_capi.redlock_ctx_get_option(ctx, "pool_size"))
        self.idle: List[List[_Conn]] = [[] for _ in range(self.n_nodes)]
        self.by_ptr: Dict[int, _Conn] = {}
        self.runs: Set[_Run] = set()
        self.background: Set[asyncio.Task[Any]] = set()
        self.delivering = False
        # One timer for every run: set for the earliest time one waits for.
        self.timer: Optional[asyncio.TimerHandle] = None
        self.timer_at = _NEVER
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
                    _capi.redlock_op_cancel(run.op, _now())
                    run.step()
            raise

    def wake_at(self, at: int, now: int) -> None:
        """Steps the runs due at `at` then, unless the timer comes sooner.
        One timer serves every run (a lock and its unlock set none of their
        own): when it fires it steps those due and is set for the next."""
        if at >= self.timer_at:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.timer_at = at
        self.timer = self.loop.call_later(max(0, at - now) / 1000, self._timers)

    def _timers(self) -> None:
        self.timer, self.timer_at = None, _NEVER
        now = _now()
        for run in [run for run in self.runs if run.timer_at <= now]:
            run.timer_at = _NEVER
            run.step()
        at = min((run.timer_at for run in self.runs), default=_NEVER)
        if at < _NEVER:
            self.wake_at(at, now)

    def attach(self, run: _Run, node: int, now: int) -> None:
        """Gives run's operation a connection to node: the last idle one that
        fits (on a Cluster node: one to the master of its slot), or a new
        one unless the engine says none may be made now (it then fails the
        node itself)."""
        op = run.op
        pool = self.idle[node]
        conn = None
        i = len(pool) - 1
        while i >= 0:
            idle = pool[i]
            reuse = _REUSE_BROKEN if idle.freed else _op_reuse(op, node, idle.conn, now)
            if reuse == _REUSE_FRESH:
                break
            if reuse != _REUSE_IDLE:
                del pool[i]
                if reuse == _REUSE_ATTACHED:
                    conn = idle
                    break
                if reuse == _REUSE_MOVED:
                    self.close(idle, "the node's master moved")   # a Sentinel node's
            i -= 1
        if conn is None:
            c = _capi.redlock_op_connect(op, node, now)
            if c is None:
                return
            conn = self._connect(node, c)
        conn.run = run
        run.conns[node] = conn

    def _connect(self, node: int, c: Any) -> _Conn:
        if _capi.redlock_ctx_node_tls(self.ctx, node):
            conn = _Conn(self, node, c)
            self.by_ptr[int(conn.conn)] = conn
            conn.connecting = self.open(node, conn, c)
            return conn
        raw = _RawConn(self, node, c)
        self.by_ptr[int(raw.conn)] = raw
        raw.connecting = self._watch(raw, self._open_raw(raw, c))
        return raw

    async def _open_raw(self, conn: _RawConn, c: Any) -> None:
        """Connects conn's socket to where c goes (a node's address, over TCP
        or a unix socket), as the loop's own connections do."""
        host = _capi.redlock_conn_host(c)
        if host is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.setblocking(False)
                await self.loop.sock_connect(sock, _capi.redlock_ctx_node_path(self.ctx,
                                                                                conn.node))
            except BaseException:
                sock.close()
                raise
            conn.made(sock)
            return
        port = _capi.redlock_conn_port(c)
        try:  # a numeric address needs no lookup
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_NUMERICHOST)
        except socket.gaierror:
            found = await self.loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        failures: List[OSError] = []
        for family, kind, proto, _, address in found:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                await self.loop.sock_connect(sock, address)
            except OSError as failure:
                sock.close()
                failures.append(failure)
                continue
            except BaseException:
                sock.close()
                raise
            conn.made(sock)
            return
        if len(failures) == 1:
            raise failures[0]
        raise OSError(f"Multiple exceptions: {', '.join(map(str, failures))}")

    def open(self, node: int, protocol: Any, c: Any = None) -> asyncio.Task[Any]:
        """Connects protocol to node (over TLS for a rediss:// node: the
        protocol sees the connection once the handshake is done): the task
        that does it. When it fails, protocol.ended(why, tls) is called.
        With the engine's connection c, to where it goes (for a Sentinel
        node, its master or a sentinel); without, to the node's server now."""
        if c is not None:
            host = _capi.redlock_conn_host(c)
            where = (host, _capi.redlock_conn_port(c), _capi.redlock_conn_server_name(c))
        else:
            host = _capi.redlock_ctx_node_host(self.ctx, node)
            where = (host, _capi.redlock_ctx_node_port(self.ctx, node),
                     _capi.redlock_ctx_node_server_name(self.ctx, node))
        if host is not None:
            coro = self._connect_tcp(protocol, node, *where)
        else:
            coro = self.loop.create_unix_connection(lambda: protocol,
                                                    _capi.redlock_ctx_node_path(self.ctx, node))
        return self._watch(protocol, coro)

    def _watch(self, protocol: Any, coro: Any) -> asyncio.Task[Any]:
        """The task that connects protocol: when it fails,
        protocol.ended(why, tls)."""
        task = self.loop.create_task(coro)

        def connected(task: asyncio.Task[Any]) -> None:
            protocol.connecting = None
            if not task.cancelled() and task.exception() is not None:
                protocol.ended(*_connect_failure(task.exception()))

        task.add_done_callback(connected)
        return task

    async def _connect_tcp(self, protocol: Any, node: int, host: str, port: int,
                           server_name: Optional[str]) -> Any:
        if not _capi.redlock_ctx_node_tls(self.ctx, node):
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

    def give_back(self, address: int) -> None:
        """Pools the connection at address (int() of the engine's pointer,
        negated when it may not serve again) that an operation gave back,
        or closes it."""
        conn = self.by_ptr.get(abs(address))
        if conn is None:
            return
        conn.run = None
        pool = self.idle[conn.node]
        if (address > 0 and not self.closed and conn.transport is not None
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
            (_capi.redlock_conn_tls_failed if tls else _capi.redlock_conn_lost)(conn.conn, why,
                                                                              _now())
            # What it still owed may be releases owed now: delivered in time.
            self.after_run()
        if _capi.redlock_conn_held(conn.conn):
            return
        conn.run = None
        conn.freed = True
        self.by_ptr.pop(int(conn.conn), None)
        _capi.redlock_conn_free(conn.conn)
        conn.shut()
        if conn.connecting is not None:
            conn.connecting.cancel()

    # -- releases owed, and handles given back

    def after_run(self) -> None:
        """Schedules the delivery of the releases owed, when the engine says
        (redlock_ctx_owed_at): after every run, and after each delivery."""
        if self.closed or self.delivering:
            return
        now = _now()
        at = _capi.redlock_ctx_owed_at(self.ctx, now)
        if at >= _NEVER or (self.deliver_timer is not None and self.deliver_at <= at):
            return
        if self.deliver_timer is not None:
            self.deliver_timer.cancel()
        self.deliver_at = at
        self.deliver_timer = self.loop.call_later(max(0, at - now) / 1000, self._deliver)

    def _deliver(self) -> None:
        self.deliver_timer = None
        now = _now()
        if self.closed or _capi.redlock_ctx_owed_at(self.ctx, now) > now:
            self.after_run()
            return
        self.delivering = True
        task = self.loop.create_task(self.run(_capi.redlock_op_deliver(self.ctx, now)))
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
            _capi.redlock_handle_free(handle)
            return
        try:
            op = _capi.redlock_op_unlock(handle, _now())
        except LockError:
            _capi.redlock_handle_free(handle)
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
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.deliver_timer is not None:
            self.deliver_timer.cancel()
        for pool in self.idle:
            for conn in pool:
                self.close(conn, "the client was closed")
            pool.clear()
        self.wakes.close()
        if self._renewer is not None:
            self._renewer.close()
