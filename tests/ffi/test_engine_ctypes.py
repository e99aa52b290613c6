"""The engine's interface (redlock_engine.h) through ctypes: a driver of its
own, written here in a few lines of Python with plain non-blocking sockets
and `selectors`, takes and releases locks on real nodes, and with a
subscriber per node has its waiting lock woken by the release. It is what
an event loop's driver does (asyncio, OpenResty cosockets): the library does
no I/O for it, and calls nothing back. REDLOCK_LIB names the built library,
as for test_ctypes.py.
"""

import ctypes
import os
import selectors
import socket
import subprocess
import threading
import time

import pytest
from conftest import get_key

OK, ELOCKED, ENOQUORUM, ENOTHELD, EEXPIRED, ETLS = 0, -1, -2, -3, -6, -13
KEEP_WAIT, KEEP_EXTEND, KEEP_LOST = 0, 1, 2

P = ctypes.c_void_p
I64 = ctypes.c_int64
U64 = ctypes.c_uint64
SIZE = ctypes.c_size_t

SIGNATURES = {
    "redlock_ctx_new": (ctypes.c_int, [ctypes.POINTER(P), ctypes.POINTER(ctypes.c_char_p), SIZE]),
    "redlock_ctx_free": (None, [P]),
    "redlock_ctx_node_count": (SIZE, [P]),
    "redlock_ctx_node_host": (ctypes.c_char_p, [P, SIZE]),
    "redlock_ctx_node_port": (ctypes.c_int, [P, SIZE]),
    "redlock_ctx_node_connect_wait": (I64, [P, SIZE, I64]),
    "redlock_now_ms": (I64, []),
    "redlock_op_lock": (ctypes.c_int, [ctypes.POINTER(P), P, ctypes.POINTER(ctypes.c_char_p),
                                       SIZE, I64, I64, I64]),
    "redlock_op_unlock": (ctypes.c_int, [ctypes.POINTER(P), P, I64]),
    "redlock_op_free": (None, [P]),
    "redlock_op_wants_conn": (ctypes.c_int, [P, SIZE]),
    "redlock_op_attach": (None, [P, SIZE, P, I64]),
    "redlock_op_no_conn": (None, [P, SIZE, ctypes.c_char_p, I64]),
    "redlock_op_conn": (P, [P, SIZE]),
    "redlock_op_step": (None, [P, I64]),
    "redlock_op_wake_at": (I64, [P]),
    "redlock_op_done": (ctypes.c_int, [P]),
    "redlock_op_status": (ctypes.c_int, [P]),
    "redlock_op_message": (ctypes.c_char_p, [P]),
    "redlock_op_take_handle": (P, [P]),
    "redlock_op_take_conn": (P, [P]),
    "redlock_conn_new": (ctypes.c_int, [ctypes.POINTER(P), P, SIZE]),
    "redlock_conn_free": (None, [P]),
    "redlock_conn_node": (SIZE, [P]),
    "redlock_conn_connected": (None, [P, I64]),
    "redlock_conn_output": (SIZE, [P, ctypes.POINTER(ctypes.c_void_p)]),
    "redlock_conn_wrote": (None, [P, SIZE]),
    "redlock_conn_received": (ctypes.c_int, [P, ctypes.c_char_p, SIZE, I64]),
    "redlock_conn_lost": (None, [P, ctypes.c_char_p, I64]),
    "redlock_conn_poolable": (ctypes.c_int, [P]),
    "redlock_conn_sending": (ctypes.c_int, [P]),
    "redlock_op_deadline": (I64, [P, SIZE]),
    "redlock_conn_broken": (ctypes.c_int, [P]),
    "redlock_handle_token": (ctypes.c_char_p, [P]),
    "redlock_handle_validity_ms": (I64, [P]),
    "redlock_handle_free": (None, [P]),
    "redlock_ctx_set_option": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p]),
    "redlock_op_awaits_release": (ctypes.c_int, [P]),
    "redlock_op_wake": (None, [P, I64]),
    "redlock_sub_new": (ctypes.c_int, [ctypes.POINTER(P), P, SIZE]),
    "redlock_sub_free": (None, [P]),
    "redlock_sub_output": (SIZE, [P, ctypes.POINTER(ctypes.c_void_p)]),
    "redlock_sub_wrote": (None, [P, SIZE]),
    "redlock_sub_received": (ctypes.c_int, [P, ctypes.c_char_p, SIZE]),
    "redlock_sub_next": (ctypes.c_int, [P]),
    "redlock_sub_channel": (ctypes.c_char_p, [P]),
    "redlock_sub_text": (ctypes.c_char_p, [P]),
    "redlock_waiters_new": (ctypes.c_int, [ctypes.POINTER(P), P]),
    "redlock_waiters_free": (None, [P]),
    "redlock_waiters_add": (ctypes.c_int, [P, U64, P]),
    "redlock_waiters_remove": (None, [P, U64, P, I64]),
    "redlock_waiters_match": (ctypes.c_int, [P, SIZE, P]),
    "redlock_waiters_event": (ctypes.c_int, [P, SIZE, ctypes.c_int, ctypes.c_char_p,
                                             ctypes.c_char_p]),
    "redlock_waiters_next": (U64, [P]),
    "redlock_ctx_node_tls": (ctypes.c_int, [P, SIZE]),
    "redlock_ctx_node_server_name": (ctypes.c_char_p, [P, SIZE]),
    "redlock_conn_tls_failed": (None, [P, ctypes.c_char_p, I64]),
    "redlock_keep_new": (ctypes.c_int, [ctypes.POINTER(P), P, I64]),
    "redlock_keep_free": (None, [P]),
    "redlock_keep_next": (ctypes.c_int, [P, I64, ctypes.POINTER(I64)]),
    "redlock_keep_extend": (ctypes.c_int, [ctypes.POINTER(P), P, I64]),
    "redlock_keep_extended": (None, [P, ctypes.c_int, ctypes.c_char_p, I64]),
    "redlock_keep_status": (ctypes.c_int, [P]),
    "redlock_keep_message": (ctypes.c_char_p, [P]),
}


@pytest.fixture(scope="module")
def lib():
    path = os.environ.get("REDLOCK_LIB")
    if not path:
        pytest.skip("REDLOCK_LIB is not set: point it at the built libredlock.so.1")
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


class Driver:
    """Drives engine operations on one thread with selectors: sockets, the
    clock and waiting are the driver's; everything else is the engine's."""

    def __init__(self, lib, ctx):
        self.lib, self.ctx = lib, ctx
        self.sel = selectors.DefaultSelector()
        self.sockets = {}   # conn pointer -> socket
        self.idle = {}      # node -> [conn pointer]

    def connect(self, node, now):
        if self.lib.redlock_ctx_node_connect_wait(self.ctx, node, now) > 0:
            return None
        conn = P()
        assert self.lib.redlock_conn_new(ctypes.byref(conn), self.ctx, node) == OK
        host = self.lib.redlock_ctx_node_host(self.ctx, node).decode()
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex((host, self.lib.redlock_ctx_node_port(self.ctx, node)))
        self.sockets[conn.value] = sock
        return conn.value

    def close(self, conn, why, now):
        sock = self.sockets.pop(conn)
        self.lib.redlock_conn_lost(conn, why, now)
        self.lib.redlock_conn_free(conn)
        sock.close()

    def run(self, op):
        lib, now = self.lib, self.lib.redlock_now_ms()
        while True:
            for node in range(lib.redlock_ctx_node_count(self.ctx)):
                if lib.redlock_op_wants_conn(op, node):
                    pool = self.idle.get(node, [])
                    conn = pool.pop() if pool else self.connect(node, now)
                    if conn is None:
                        lib.redlock_op_no_conn(op, node, b"backing off", now)
                    else:
                        lib.redlock_op_attach(op, node, conn, now)
            lib.redlock_op_step(op, now)
            if lib.redlock_op_done(op):
                break
            self.wait(op, now)
            now = lib.redlock_now_ms()
        # Decided at a quorum; the command still goes to every node reachable
        # within its deadline.
        while self.sending(op, now):
            self.wait(op, now)
            now = lib.redlock_now_ms()
        while True:
            conn = lib.redlock_op_take_conn(op)
            if not conn:
                break
            if lib.redlock_conn_poolable(conn):
                self.idle.setdefault(lib.redlock_conn_node(conn), []).append(conn)
            else:
                self.close(conn, b"closed by the client", now)
        return lib.redlock_op_status(op)

    def sending(self, op, now):
        lib = self.lib
        for node in range(lib.redlock_ctx_node_count(self.ctx)):
            conn = lib.redlock_op_conn(op, node)
            if conn and lib.redlock_conn_sending(conn) and lib.redlock_op_deadline(op, node) > now:
                return True
        return False

    def wait(self, op, now):
        lib = self.lib
        for node in range(lib.redlock_ctx_node_count(self.ctx)):
            conn = lib.redlock_op_conn(op, node)
            if conn:
                self.sel.register(self.sockets[conn], selectors.EVENT_READ | selectors.EVENT_WRITE,
                                  conn)
        wake = lib.redlock_op_wake_at(op)
        timeout = max(0, min(wake - now, 1000)) / 1000
        for key, events in self.sel.select(timeout):
            self.service(key.data, key.fileobj, events)
        for key in list(self.sel.get_map().values()):
            self.sel.unregister(key.fileobj)

    def service(self, conn, sock, events):
        lib, now = self.lib, self.lib.redlock_now_ms()
        if events & selectors.EVENT_WRITE:
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.close(conn, os.strerror(err).encode(), now)
                return
            lib.redlock_conn_connected(conn, now)
            out = ctypes.c_void_p()
            n = lib.redlock_conn_output(conn, ctypes.byref(out))
            if n:
                lib.redlock_conn_wrote(conn, sock.send(ctypes.string_at(out, n)))
        if events & selectors.EVENT_READ:
            data = sock.recv(65536)
            if not data:
                self.close(conn, b"closed by the server", now)
            elif lib.redlock_conn_received(conn, data, len(data), now) != OK:
                self.close(conn, b"broken", now)


class WakingDriver(Driver):
    """The same driver, its waiting lock woken by releases: the library's
    redlock_waiters says whom to wake, over one subscriber socket per node
    (connected at once, for brevity). The lock that waits is waiter 1."""

    def __init__(self, lib, ctx):
        super().__init__(lib, ctx)
        self.waiters = P()
        assert lib.redlock_waiters_new(ctypes.byref(self.waiters), ctx) == OK
        self.subs = {}      # node -> (subscriber pointer, socket)
        self.waiting = None

    def run(self, op):
        rc = super().run(op)
        if self.waiting:
            self.lib.redlock_waiters_remove(self.waiters, 1, op, self.lib.redlock_now_ms())
            self.waiting = None
        return rc

    def wait(self, op, now):
        lib = self.lib
        if not self.waiting and lib.redlock_op_awaits_release(op):
            assert lib.redlock_waiters_add(self.waiters, 1, op) == OK
            self.waiting = op
        for node in range(lib.redlock_ctx_node_count(self.ctx)):
            if self.waiting and node not in self.subs:
                sub = P()
                assert lib.redlock_sub_new(ctypes.byref(sub), self.ctx, node) == OK
                address = (lib.redlock_ctx_node_host(self.ctx, node).decode(),
                           lib.redlock_ctx_node_port(self.ctx, node))
                self.subs[node] = (sub.value, socket.create_connection(address))
            if node in self.subs:
                sub, sock = self.subs[node]
                lib.redlock_waiters_match(self.waiters, node, sub)
                out = ctypes.c_void_p()
                n = lib.redlock_sub_output(sub, ctypes.byref(out))
                if n:
                    lib.redlock_sub_wrote(sub, sock.send(ctypes.string_at(out, n)))
                self.sel.register(sock, selectors.EVENT_READ, ("sub", node))
        super().wait(op, now)

    def service(self, conn, sock, events):
        if not isinstance(conn, tuple):
            super().service(conn, sock, events)
            return
        lib, node = self.lib, conn[1]
        sub = self.subs[node][0]
        data = sock.recv(65536)
        assert data and lib.redlock_sub_received(sub, data, len(data)) == OK
        while True:
            event = lib.redlock_sub_next(sub)
            if event == 0:
                break
            assert event > 0
            lib.redlock_waiters_event(self.waiters, node, event, lib.redlock_sub_channel(sub),
                                      lib.redlock_sub_text(sub))
        while lib.redlock_waiters_next(self.waiters) == 1:
            lib.redlock_op_wake(self.waiting, lib.redlock_now_ms())

    def close_all(self):
        for sub, sock in self.subs.values():
            sock.close()
            self.lib.redlock_sub_free(sub)
        self.lib.redlock_waiters_free(self.waiters)


def new_ctx(lib, uris):
    ctx = P()
    arr = (ctypes.c_char_p * len(uris))(*[u.encode() for u in uris])
    assert lib.redlock_ctx_new(ctypes.byref(ctx), arr, len(uris)) == OK
    return ctx


def lock(lib, driver, ctx, name, wait_ms=0, lease_ms=10000):
    op = P()
    names = (ctypes.c_char_p * 1)(name.encode())
    assert lib.redlock_op_lock(ctypes.byref(op), ctx, names, 1, lease_ms, wait_ms,
                               lib.redlock_now_ms()) == OK
    rc = driver.run(op)
    handle = lib.redlock_op_take_handle(op)
    message = lib.redlock_op_message(op).decode()
    lib.redlock_op_free(op)
    return rc, handle, message


def unlock(lib, driver, handle):
    op = P()
    assert lib.redlock_op_unlock(ctypes.byref(op), handle, lib.redlock_now_ms()) == OK
    rc = driver.run(op)
    lib.redlock_op_free(op)
    return rc


def test_a_python_driver_locks_and_unlocks_through_the_engine(lib, uris):
    ctx, other_ctx = new_ctx(lib, uris), new_ctx(lib, uris)
    driver, other = Driver(lib, ctx), Driver(lib, other_ctx)
    for _ in range(20):
        rc, handle, message = lock(lib, driver, ctx, "engine-job")
        assert rc == OK, message
        token = lib.redlock_handle_token(handle).decode()
        assert lib.redlock_handle_validity_ms(handle) > 9000
        # A second client, its own driver: refused while the first holds it.
        rc, none, message = lock(lib, other, other_ctx, "engine-job")
        assert rc == ELOCKED and not none and "engine-job" in message
        assert unlock(lib, driver, handle) == OK
        lib.redlock_handle_free(handle)
    # Unlock returned at a quorum; the last node deletes the key a moment later.
    deadline = time.monotonic() + 5
    while any(get_key(uri, "engine-job") for uri in uris) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert token and all(get_key(uri, "engine-job") == "" for uri in uris)
    # The connections were pooled and reused: one per node.
    assert all(len(conns) == 1 for conns in driver.idle.values())
    for d in (driver, other):
        for conns in d.idle.values():
            for conn in conns:
                d.close(conn, b"done", lib.redlock_now_ms())
    lib.redlock_ctx_free(ctx)
    lib.redlock_ctx_free(other_ctx)


def test_a_python_driver_has_its_waiting_lock_woken_by_the_release(lib, uris):
    ctx, holder_ctx = new_ctx(lib, uris), new_ctx(lib, uris)
    # Its next attempt 5 s away: taken sooner, it was woken.
    for name, value in ((b"retry_delay_ms", b"5000"), (b"retry_jitter_ms", b"0")):
        assert lib.redlock_ctx_set_option(ctx, name, value) == OK
    driver, holder = WakingDriver(lib, ctx), Driver(lib, holder_ctx)
    rc, held, message = lock(lib, holder, holder_ctx, "engine-wake")
    assert rc == OK, message
    released = {}

    def release():
        time.sleep(0.3)
        released["at"] = time.monotonic()
        released["rc"] = unlock(lib, holder, held)

    thread = threading.Thread(target=release)
    thread.start()
    rc, handle, message = lock(lib, driver, ctx, "engine-wake", wait_ms=10000)
    taken = time.monotonic()
    thread.join()
    assert rc == OK and released["rc"] == OK, message
    assert taken - released["at"] < 1.0, "not woken by the release"
    assert unlock(lib, driver, handle) == OK
    for h in (handle, held):
        lib.redlock_handle_free(h)
    driver.close_all()
    for d, c in ((driver, ctx), (holder, holder_ctx)):
        for conns in d.idle.values():
            for conn in conns:
                d.close(conn, b"done", lib.redlock_now_ms())
        lib.redlock_ctx_free(c)


def keep_step(lib, driver, keep):
    """One turn of a driver's renewal: asks the keep what to do and runs the
    extension it asks for. Returns (what, when to ask again)."""
    now, at = lib.redlock_now_ms(), I64()
    what = lib.redlock_keep_next(keep, now, ctypes.byref(at))
    if what == KEEP_EXTEND:
        op = P()
        if lib.redlock_keep_extend(ctypes.byref(op), keep, now) == OK:
            rc = driver.run(op)
            lib.redlock_keep_extended(keep, rc, lib.redlock_op_message(op),
                                      lib.redlock_now_ms())
            lib.redlock_op_free(op)
    return what, at.value


def test_a_python_driver_keeps_a_lock_by_the_engines_rules(lib, uris):
    """The rules of a kept lock come from the library: a 600 ms lease is
    extended a third of it after each success and outlives itself several
    times; when the key is gone from the nodes, the next extension finds it
    not ours and the keep says lost, with why."""
    ctx = new_ctx(lib, uris)
    driver = Driver(lib, ctx)
    rc, handle, message = lock(lib, driver, ctx, "engine-keep", lease_ms=600)
    assert rc == OK, message
    keep = P()
    assert lib.redlock_keep_new(ctypes.byref(keep), handle, lib.redlock_now_ms()) == OK
    extended, started = 0, time.monotonic()
    while time.monotonic() - started < 2.0:
        what, at = keep_step(lib, driver, keep)
        assert what != KEEP_LOST, lib.redlock_keep_message(keep)
        extended += what == KEEP_EXTEND
        time.sleep(max(0, at - lib.redlock_now_ms()) / 1000)
    # Every 200 ms for 2 s, and the key is still on every node.
    assert 6 <= extended <= 12, extended
    token = lib.redlock_handle_token(handle).decode()
    assert all(get_key(uri, "engine-keep") == token for uri in uris)

    for uri in uris:
        subprocess.run(["redis-cli", "-u", uri, "DEL", "engine-keep"], check=True,
                       capture_output=True)
    deadline = time.monotonic() + 2
    what = KEEP_WAIT
    while what != KEEP_LOST and time.monotonic() < deadline:
        what, at = keep_step(lib, driver, keep)
        if what == KEEP_WAIT:
            time.sleep(max(0, at - lib.redlock_now_ms()) / 1000)
    assert what == KEEP_LOST
    assert lib.redlock_keep_status(keep) == ENOTHELD
    assert b"engine-keep" in lib.redlock_keep_message(keep)
    lib.redlock_keep_free(keep)
    lib.redlock_handle_free(handle)
    for conns in driver.idle.values():
        for conn in conns:
            driver.close(conn, b"done", lib.redlock_now_ms())
    lib.redlock_ctx_free(ctx)


def test_a_keep_retries_failed_extensions_until_validity_runs_out(lib, uris):
    """Failed extensions are tried again after retry_delay_ms while validity
    lasts; at its end the lock is lost, even with an extension under way, and
    that extension's late success changes nothing. The clock here is the
    test's: the keep does no I/O and reads no clock."""
    ctx = new_ctx(lib, uris)
    assert lib.redlock_ctx_set_option(ctx, b"retry_delay_ms", b"50") == OK
    driver = Driver(lib, ctx)
    rc, handle, message = lock(lib, driver, ctx, "engine-keep-fail", lease_ms=3000)
    assert rc == OK, message
    now = lib.redlock_now_ms()
    expires = now + lib.redlock_handle_validity_ms(handle)
    keep, at = P(), I64()
    assert lib.redlock_keep_new(ctypes.byref(keep), handle, now) == OK
    assert lib.redlock_keep_next(keep, now, ctypes.byref(at)) == KEEP_WAIT
    assert at.value == now + 1000
    assert lib.redlock_keep_next(keep, now + 1000, ctypes.byref(at)) == KEEP_EXTEND
    assert abs(at.value - expires) <= 1
    # Under way: nothing more to start until it ends.
    assert lib.redlock_keep_next(keep, now + 1001, ctypes.byref(at)) == KEEP_WAIT
    lib.redlock_keep_extended(keep, ENOQUORUM, b"no quorum", now + 1010)
    assert lib.redlock_keep_next(keep, now + 1020, ctypes.byref(at)) == KEEP_WAIT
    assert at.value == now + 1060
    assert lib.redlock_keep_next(keep, now + 1060, ctypes.byref(at)) == KEEP_EXTEND
    # Validity runs out with this extension under way: lost, for good.
    assert lib.redlock_keep_next(keep, expires + 5, ctypes.byref(at)) == KEEP_LOST
    assert lib.redlock_keep_status(keep) == EEXPIRED
    assert b"validity ran out" in lib.redlock_keep_message(keep)
    lib.redlock_keep_extended(keep, OK, b"", expires + 10)
    assert lib.redlock_keep_next(keep, expires + 11, ctypes.byref(at)) == KEEP_LOST
    assert lib.redlock_keep_status(keep) == EEXPIRED
    lib.redlock_keep_free(keep)

    # An extension asked for before validity ran out, whose success came
    # after: lost all the same.
    assert lib.redlock_keep_new(ctypes.byref(keep), handle, now) == OK
    assert lib.redlock_keep_next(keep, now + 1000, ctypes.byref(at)) == KEEP_EXTEND
    lib.redlock_keep_extended(keep, OK, b"", expires + 10)
    assert lib.redlock_keep_status(keep) == EEXPIRED
    assert b"ms before an extension succeeded" in lib.redlock_keep_message(keep)
    assert lib.redlock_keep_next(keep, now + 1100, ctypes.byref(at)) == KEEP_LOST
    lib.redlock_keep_free(keep)
    assert unlock(lib, driver, handle) == OK
    lib.redlock_handle_free(handle)
    for conns in driver.idle.values():
        for conn in conns:
            driver.close(conn, b"done", lib.redlock_now_ms())
    lib.redlock_ctx_free(ctx)


def test_the_engine_tells_a_driver_which_nodes_are_tls(lib):
    """rediss:// nodes are TLS, with the name their certificates must carry;
    a TLS failure the driver reports fails the node with REDLOCK_ETLS, and
    goes on being told while the node backs off (no I/O here at all)."""
    uris = [b"rediss://10.0.0.1:6380", b"redis://10.0.0.2", b"rediss://[::1]:6390"]
    ctx = P()
    assert lib.redlock_ctx_new(ctypes.byref(ctx), (ctypes.c_char_p * 3)(*uris), 3) == OK
    try:
        assert [lib.redlock_ctx_node_tls(ctx, i) for i in range(4)] == [1, 0, 1, 0]
        assert [lib.redlock_ctx_node_server_name(ctx, i) for i in range(4)] == [
            b"10.0.0.1", None, b"::1", None]
        assert lib.redlock_ctx_set_option(ctx, b"tls_server_name", b"redis.example") == OK
        assert lib.redlock_ctx_node_server_name(ctx, 0) == b"redis.example"

        now = lib.redlock_now_ms()
        op, conn = P(), P()
        names = (ctypes.c_char_p * 1)(b"engine-tls")
        assert lib.redlock_op_lock(ctypes.byref(op), ctx, names, 1, 10000, 0, now) == OK
        assert lib.redlock_conn_new(ctypes.byref(conn), ctx, 0) == OK
        lib.redlock_op_attach(op, 0, conn, now)
        lib.redlock_conn_tls_failed(conn, b"TLS certificate check failed: certificate has expired",
                                    now)
        lib.redlock_op_no_conn(op, 1, b"down", now)
        lib.redlock_op_no_conn(op, 2, b"backing off", now)
        lib.redlock_op_step(op, now)
        assert lib.redlock_op_done(op)
        assert lib.redlock_op_status(op) == ENOQUORUM
        message = lib.redlock_op_message(op).decode()
        assert "10.0.0.1:6380: TLS certificate check failed: certificate has expired" in message
        taken = set()
        while True:
            c = lib.redlock_op_take_conn(op)
            if not c:
                break
            taken.add(c)
        taken.add(conn.value)
        for c in taken:
            lib.redlock_conn_free(c)
        lib.redlock_op_free(op)

        # Node 0 backs off: a driver's "no connection" is the TLS failure again.
        op = P()
        assert lib.redlock_op_lock(ctypes.byref(op), ctx, names, 1, 10000, 0, now) == OK
        for node in range(3):
            lib.redlock_op_no_conn(op, node, b"unreachable, backing off", now)
        lib.redlock_op_step(op, now)
        assert lib.redlock_op_done(op)
        message = lib.redlock_op_message(op).decode()
        assert "10.0.0.1:6380: TLS certificate check failed: certificate has expired (next" \
            in message, message
        lib.redlock_op_free(op)
    finally:
        lib.redlock_ctx_free(ctx)
