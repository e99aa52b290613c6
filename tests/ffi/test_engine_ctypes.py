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
# redlock_keeper_drive's bits.
KEEPER_RUN, KEEPER_LOST = 1, 2

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
    "redlock_conn_owed": (SIZE, [P]),
    "redlock_handle_token": (ctypes.c_char_p, [P]),
    "redlock_handle_validity_ms": (I64, [P]),
    "redlock_handle_free": (None, [P]),
    "redlock_ctx_set_option": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_char_p]),
    "redlock_op_awaits_release": (ctypes.c_int, [P]),
    "redlock_op_wake": (None, [P, I64]),
    "redlock_waiters_new": (ctypes.c_int, [ctypes.POINTER(P), P]),
    "redlock_waiters_free": (None, [P]),
    "redlock_waiters_add": (ctypes.c_int, [P, U64, P]),
    "redlock_waiters_remove": (None, [P, U64, P, I64]),
    "redlock_waiters_drive": (ctypes.c_int, [P, I64, ctypes.POINTER(I64)]),
    "redlock_waiters_next_connect": (ctypes.c_int, [P]),
    "redlock_waiters_next_close": (ctypes.c_int, [P]),
    "redlock_waiters_connected": (None, [P, SIZE]),
    "redlock_waiters_lost": (None, [P, SIZE, I64]),
    "redlock_waiters_received": (ctypes.c_int, [P, SIZE, ctypes.c_char_p, SIZE, I64]),
    "redlock_waiters_output": (SIZE, [P, SIZE, ctypes.POINTER(ctypes.c_void_p)]),
    "redlock_waiters_wrote": (None, [P, SIZE, SIZE]),
    "redlock_waiters_next": (U64, [P]),
    "redlock_ctx_node_tls": (ctypes.c_int, [P, SIZE]),
    "redlock_ctx_node_server_name": (ctypes.c_char_p, [P, SIZE]),
    "redlock_conn_tls_failed": (None, [P, ctypes.c_char_p, I64]),
    "redlock_keeper_new": (ctypes.c_int, [ctypes.POINTER(P), P]),
    "redlock_keeper_free": (None, [P]),
    "redlock_keeper_add": (ctypes.c_int, [P, U64, P, I64]),
    "redlock_keeper_remove": (ctypes.c_int, [P, U64]),
    "redlock_keeper_drive": (ctypes.c_int, [P, I64, ctypes.POINTER(I64)]),
    "redlock_keeper_take_op": (P, [P]),
    "redlock_keeper_op_ended": (ctypes.c_int, [P, P, I64]),
    "redlock_keeper_next_lost": (U64, [P]),
    "redlock_keeper_status": (ctypes.c_int, [P, U64]),
    "redlock_keeper_message": (ctypes.c_char_p, [P, U64]),
    "redlock_op_drive": (ctypes.c_int, [P, I64, ctypes.POINTER(I64)]),
    "redlock_op_next_wanted": (ctypes.c_int, [P, SIZE]),
    "redlock_op_connect": (P, [P, SIZE, I64]),
    "redlock_op_deliver": (ctypes.c_int, [ctypes.POINTER(P), P, I64]),
    "redlock_ctx_owes": (ctypes.c_int, [P]),
    "redlock_ctx_owed_at": (I64, [P, I64]),
    "redlock_ctx_node_server_ip": (ctypes.c_int, [P, SIZE]),
    "redlock_ctx_tls_check": (ctypes.c_int, [P]),
    "redlock_ctx_tls_verify": (ctypes.c_int, [P]),
    "redlock_ctx_tls_ca_file": (ctypes.c_char_p, [P]),
    "redlock_ctx_tls_ca_dir": (ctypes.c_char_p, [P]),
    "redlock_ctx_tls_cert_file": (ctypes.c_char_p, [P]),
    "redlock_ctx_tls_key_file": (ctypes.c_char_p, [P]),
    "redlock_ctx_tls_min_version": (ctypes.c_int, [P]),
    "redlock_errmsg": (ctypes.c_char_p, []),
}

# redlock_op_drive's bits.
CONNECT, WRITE, WAIT, AWAITS, DONE, TAIL = 1, 2, 4, 8, 16, 32
# redlock_waiters_drive's bits.
WAITERS_CONNECT, WAITERS_WRITE, WAITERS_CLOSE, WAITERS_WAKE = 1, 2, 4, 8
NEVER = 2**63 - 1
EINVAL = -4


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
    redlock_waiters says when to connect, write and close one subscriber
    socket per node, and whom to wake (connects block, for brevity). The
    lock that waits is waiter 1."""

    def __init__(self, lib, ctx):
        super().__init__(lib, ctx)
        self.waiters = P()
        assert lib.redlock_waiters_new(ctypes.byref(self.waiters), ctx) == OK
        self.subs = {}      # node -> socket
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
        self.tend(now)
        for node, sock in self.subs.items():
            self.sel.register(sock, selectors.EVENT_READ, ("sub", node))
        super().wait(op, now)

    def tend(self, now):
        lib, w, at = self.lib, self.waiters, I64()
        todo = lib.redlock_waiters_drive(w, now, ctypes.byref(at))
        while todo & WAITERS_CLOSE and (node := lib.redlock_waiters_next_close(w)) >= 0:
            self.subs.pop(node).close()
        while todo & WAITERS_CONNECT and (node := lib.redlock_waiters_next_connect(w)) >= 0:
            address = (lib.redlock_ctx_node_host(self.ctx, node).decode(),
                       lib.redlock_ctx_node_port(self.ctx, node))
            self.subs[node] = socket.create_connection(address)
            lib.redlock_waiters_connected(w, node)
            todo |= lib.redlock_waiters_drive(w, now, ctypes.byref(at))
        for node, sock in self.subs.items():
            out = ctypes.c_void_p()
            n = lib.redlock_waiters_output(w, node, ctypes.byref(out))
            if n:
                lib.redlock_waiters_wrote(w, node, sock.send(ctypes.string_at(out, n)))
        while todo & WAITERS_WAKE and lib.redlock_waiters_next(w) == 1:
            lib.redlock_op_wake(self.waiting, now)

    def service(self, conn, sock, events):
        if not isinstance(conn, tuple):
            super().service(conn, sock, events)
            return
        lib, node, now = self.lib, conn[1], self.lib.redlock_now_ms()
        data = sock.recv(65536)
        assert data and lib.redlock_waiters_received(self.waiters, node, data, len(data),
                                                     now) == OK
        self.tend(now)

    def close_all(self):
        for sock in self.subs.values():
            sock.close()
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


def keeper_step(lib, driver, keeper):
    """One turn of a driver's renewals: drives the keeper and runs the
    renewals it hands out. Returns (its bits, renewals run, when to drive
    it again)."""
    at = I64()
    what = lib.redlock_keeper_drive(keeper, lib.redlock_now_ms(), ctypes.byref(at))
    ran = 0
    while what & KEEPER_RUN and (op := lib.redlock_keeper_take_op(keeper)):
        driver.run(op)
        assert lib.redlock_keeper_op_ended(keeper, op, lib.redlock_now_ms()) == OK
        lib.redlock_op_free(op)
        ran += 1
    return what, ran, at.value


def test_a_python_driver_keeps_a_lock_by_the_engines_rules(lib, uris):
    """The rules of a kept lock come from the library's keeper: a 600 ms
    lease is extended a third of it after each success and outlives itself
    several times; when the key is gone from the nodes, the next extension
    finds it not ours and the keeper says lost, with why."""
    ctx = new_ctx(lib, uris)
    driver = Driver(lib, ctx)
    rc, handle, message = lock(lib, driver, ctx, "engine-keep", lease_ms=600)
    assert rc == OK, message
    keeper = P()
    assert lib.redlock_keeper_new(ctypes.byref(keeper), ctx) == OK
    assert lib.redlock_keeper_add(keeper, 1, handle, lib.redlock_now_ms()) == OK
    extended, started = 0, time.monotonic()
    while time.monotonic() - started < 2.0:
        what, ran, at = keeper_step(lib, driver, keeper)
        assert not what & KEEPER_LOST, lib.redlock_keeper_message(keeper, 1)
        extended += ran
        time.sleep(max(0, at - lib.redlock_now_ms()) / 1000)
    # Every 200 ms for 2 s, and the key is still on a quorum of the nodes (a
    # node that missed an extension's deadline on a busy machine may have
    # let its copy expire: the lock stands on the others).
    assert 6 <= extended <= 12, extended
    token = lib.redlock_handle_token(handle).decode()
    assert sum(get_key(uri, "engine-keep") == token for uri in uris) > len(uris) // 2

    for uri in uris:
        subprocess.run(["redis-cli", "-u", uri, "DEL", "engine-keep"], check=True,
                       capture_output=True)
    deadline = time.monotonic() + 2
    what = 0
    while not what & KEEPER_LOST and time.monotonic() < deadline:
        what, _, at = keeper_step(lib, driver, keeper)
        if not what & KEEPER_LOST:
            time.sleep(max(0, at - lib.redlock_now_ms()) / 1000)
    assert what & KEEPER_LOST and lib.redlock_keeper_next_lost(keeper) == 1
    assert lib.redlock_keeper_next_lost(keeper) == 0
    assert lib.redlock_keeper_status(keeper, 1) == ENOTHELD
    assert b"engine-keep" in lib.redlock_keeper_message(keeper, 1)
    assert lib.redlock_keeper_remove(keeper, 1) == 0
    lib.redlock_keeper_free(keeper)
    lib.redlock_handle_free(handle)
    for conns in driver.idle.values():
        for conn in conns:
            driver.close(conn, b"done", lib.redlock_now_ms())
    lib.redlock_ctx_free(ctx)


def test_a_keeper_retries_failed_extensions_until_validity_runs_out(lib, uris):
    """Failed extensions are tried again after retry_delay_ms while validity
    lasts; at its end the lock is lost, even with an extension under way, and
    that extension's late success changes nothing. The clock here is the
    test's: the keeper does no I/O and reads no clock."""
    ctx = new_ctx(lib, uris)
    assert lib.redlock_ctx_set_option(ctx, b"retry_delay_ms", b"50") == OK
    driver = Driver(lib, ctx)
    rc, handle, message = lock(lib, driver, ctx, "engine-keep-fail", lease_ms=3000)
    assert rc == OK, message
    now = lib.redlock_now_ms()
    expires = now + lib.redlock_handle_validity_ms(handle)
    keeper, at = P(), I64()
    assert lib.redlock_keeper_new(ctypes.byref(keeper), ctx) == OK
    assert lib.redlock_keeper_add(keeper, 1, handle, now) == OK
    assert lib.redlock_keeper_drive(keeper, now, ctypes.byref(at)) == 0
    # Due a third of the lease after, less the lock's own spread (up to a
    # twelfth of the lease, so that locks taken together spread out).
    due = at.value
    assert now + 1000 - 3000 // 12 <= due <= now + 1000
    assert lib.redlock_keeper_drive(keeper, due, ctypes.byref(at)) == KEEPER_RUN
    op = lib.redlock_keeper_take_op(keeper)
    assert op and not lib.redlock_keeper_take_op(keeper)
    # Under way: nothing more to start until it ends; then given up (not
    # run), it counts as failed, and is tried again retry_delay_ms after.
    assert lib.redlock_keeper_drive(keeper, due + 1, ctypes.byref(at)) == 0
    assert lib.redlock_keeper_op_ended(keeper, op, due + 10) == OK
    lib.redlock_op_free(op)
    assert lib.redlock_keeper_drive(keeper, due + 20, ctypes.byref(at)) == 0
    assert at.value == due + 60
    assert lib.redlock_keeper_drive(keeper, due + 60, ctypes.byref(at)) == KEEPER_RUN
    op = lib.redlock_keeper_take_op(keeper)
    # Validity runs out with this extension under way: lost, for good.
    assert lib.redlock_keeper_drive(keeper, expires + 5, ctypes.byref(at)) == KEEPER_LOST
    assert lib.redlock_keeper_next_lost(keeper) == 1
    assert lib.redlock_keeper_status(keeper, 1) == EEXPIRED
    assert b"validity ran out" in lib.redlock_keeper_message(keeper, 1)
    assert lib.redlock_keeper_op_ended(keeper, op, expires + 10) == OK
    lib.redlock_op_free(op)
    assert lib.redlock_keeper_drive(keeper, expires + 11, ctypes.byref(at)) == 0
    assert lib.redlock_keeper_status(keeper, 1) == EEXPIRED
    assert lib.redlock_keeper_remove(keeper, 1) == 0

    # An extension started before validity ran out, whose success came
    # after: lost all the same.
    assert lib.redlock_keeper_add(keeper, 2, handle, now) == OK
    assert lib.redlock_keeper_drive(keeper, due, ctypes.byref(at)) == KEEPER_RUN
    op = lib.redlock_keeper_take_op(keeper)
    assert driver.run(op) == OK
    assert lib.redlock_keeper_op_ended(keeper, op, expires + 10) == OK
    lib.redlock_op_free(op)
    assert lib.redlock_keeper_drive(keeper, expires + 11, ctypes.byref(at)) == KEEPER_LOST
    assert lib.redlock_keeper_status(keeper, 2) == EEXPIRED
    assert b"ms before an extension succeeded" in lib.redlock_keeper_message(keeper, 2)
    assert lib.redlock_keeper_remove(keeper, 2) == 0
    lib.redlock_keeper_free(keeper)
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


# ---- redlock_op_drive, redlock_ctx_owed_at and the TLS settings: no I/O, a
# fake clock, and the nodes' replies scripted here.

def commands(data):
    """The command names of RESP arrays of bulk strings, as a driver writes them."""
    names, i = [], 0
    while i < len(data):
        assert data[i:i + 1] == b"*", data[i:i + 40]
        end = data.index(b"\r\n", i)
        argc, i = int(data[i + 1:end]), end + 2
        args = []
        for _ in range(argc):
            end = data.index(b"\r\n", i)
            n = int(data[i + 1:end])
            args.append(data[end + 2:end + 2 + n])
            i = end + 2 + n + 2
        names.append(args[0].decode())
    return names


def bulk(text):
    return b"$%d\r\n%s\r\n" % (len(text), text)


def replies(names, node, vote=b":1\r\n"):
    """What a Redis 6.2 node answers to them (vote: to the lock's command;
    the EVAL right after INFO is the guard script's: a fresh server, 0; it
    knows no FCALL, the library's probe and the guard's other way)."""
    answer = {"SCRIPT": bulk(b"0" * 40), "EVALSHA": vote, "EVAL": vote,
              "FCALL": b"-ERR unknown command 'FCALL', with args beginning with: \r\n",
              "INFO": bulk(b"redis_version:6.2.0\r\nrun_id:%040x\r\n" % (node + 1))}
    return b"".join(b":0\r\n" if name == "EVAL" and i > 0 and names[i - 1] == "INFO"
                    else answer[name] for i, name in enumerate(names))


def take_output(lib, conn):
    out = ctypes.c_void_p()
    n = lib.redlock_conn_output(conn, ctypes.byref(out))
    data = ctypes.string_at(out, n) if n else b""
    if n:
        lib.redlock_conn_wrote(conn, n)
    return data


def drive(lib, op, now):
    at = I64()
    what = lib.redlock_op_drive(op, now, ctypes.byref(at))
    return what, at.value


def fake_ctx(lib, n=3, **options):
    """A client of n nodes that the test answers byte by byte (replies()).
    They keep no records of the group: restart_records is off unless asked
    (with it, a fresh group's first lock reads them and takes two rounds)."""
    uris = [f"redis://127.0.0.1:{7001 + i}" for i in range(n)]
    ctx = new_ctx(lib, uris)
    options.setdefault("restart_records", 0)
    for name, value in options.items():
        assert lib.redlock_ctx_set_option(ctx, name.encode(), str(value).encode()) == OK
    return ctx


def lock_op(lib, ctx, name, now, wait_ms=0):
    op = P()
    names = (ctypes.c_char_p * 1)(name.encode())
    assert lib.redlock_op_lock(ctypes.byref(op), ctx, names, 1, 10000, wait_ms, now) == OK
    return op


def free_op(lib, op):
    """Frees op and every connection it gives back (those lost included)."""
    while True:
        c = lib.redlock_op_take_conn(op)
        if not c:
            break
        lib.redlock_conn_free(c)
    lib.redlock_op_free(op)


def test_drive_says_connect_write_wait_tail_and_done(lib):
    """A lock on three nodes driven by redlock_op_drive alone: it asks for a
    connection to each node, waits for the connects (nothing to write yet),
    has the commands written once they are made, decides at a quorum while
    the third node is still connecting (the tail, until that node's
    deadline), and is over after it."""
    t = 1000
    ctx = fake_ctx(lib, connect_timeout_ms=100, node_timeout_ms=50)
    op = lock_op(lib, ctx, "drive", t)
    assert drive(lib, op, t) == (CONNECT, t)
    wanted, node = [], lib.redlock_op_next_wanted(op, 0)
    while node >= 0:
        wanted.append(node)
        node = lib.redlock_op_next_wanted(op, node + 1)
    assert wanted == [0, 1, 2]
    conns = [lib.redlock_op_connect(op, i, t) for i in wanted]
    assert all(conns) and [lib.redlock_conn_node(c) for c in conns] == [0, 1, 2]
    assert lib.redlock_op_next_wanted(op, 0) == -1
    assert not lib.redlock_op_connect(op, 0, t), "a node that has its connection gets none"
    # Connecting (until the connect deadline): nothing to write.
    assert drive(lib, op, t) == (WAIT, t + 100)
    for c in conns[:2]:
        lib.redlock_conn_connected(c, t + 1)
    what, at = drive(lib, op, t + 1)
    assert what == WAIT | WRITE and at == t + 51
    for node, c in enumerate(conns[:2]):
        names = commands(take_output(lib, c))
        # The library's probe first; the guard both ways, as no probe has
        # answered yet; then the lock's command.
        assert names[0] == "FCALL" and names[-4:] == ["INFO", "EVAL", "FCALL", "EVALSHA"], names
        assert lib.redlock_conn_received(c, replies(names, node), len(replies(names, node)),
                                         t + 2) == OK
    # Decided at two of three; node 2 still connecting: the tail runs to its deadline.
    what, at = drive(lib, op, t + 2)
    assert what == DONE | TAIL and at == t + 100, (what, at)
    assert lib.redlock_op_status(op) == OK
    handle = lib.redlock_op_take_handle(op)
    assert handle
    # Past the deadline nothing is sending any more: over.
    assert drive(lib, op, t + 101) == (DONE, NEVER)
    free_op(lib, op)
    lib.redlock_handle_free(handle)
    lib.redlock_ctx_free(ctx)


def test_drive_applies_the_nodes_connect_back_off(lib):
    """A node whose connects failed backs off: redlock_op_connect makes no
    connection to it and fails it, with the time of the next attempt."""
    t = 5000
    ctx = fake_ctx(lib)
    c = P()
    assert lib.redlock_conn_new(ctypes.byref(c), ctx, 1) == OK
    lib.redlock_conn_lost(c, b"cannot connect: Connection refused", t)
    lib.redlock_conn_free(c)
    assert lib.redlock_ctx_node_connect_wait(ctx, 1, t) == 25
    op = lock_op(lib, ctx, "backoff", t)
    assert drive(lib, op, t)[0] == CONNECT
    made = [lib.redlock_op_connect(op, i, t) for i in range(3)]
    assert made[0] and not made[1] and made[2]
    what, _ = drive(lib, op, t)
    assert what == WAIT
    for i in (0, 2):
        lib.redlock_conn_lost(made[i], b"connection lost: reset", t + 1)
    assert drive(lib, op, t + 1) == (DONE, NEVER)
    assert lib.redlock_op_status(op) == ENOQUORUM
    assert "next connection attempt in 25 ms" in lib.redlock_op_message(op).decode()
    free_op(lib, op)
    lib.redlock_ctx_free(ctx)


def test_drive_says_when_a_lock_awaits_a_release(lib):
    """Refused by a quorum with time left to wait: the release of what it
    took goes out (WRITE), and the lock pauses for retry_delay_ms (AWAITS,
    worth waking); at the pause's end a new round goes out on the same
    connections."""
    t = 2000
    ctx = fake_ctx(lib, retry_delay_ms=200, retry_jitter_ms=0)
    op = lock_op(lib, ctx, "awaits", t, wait_ms=5000)
    assert drive(lib, op, t)[0] == CONNECT
    conns = [lib.redlock_op_connect(op, i, t) for i in range(3)]
    for c in conns:
        lib.redlock_conn_connected(c, t)
    assert drive(lib, op, t)[0] == WAIT | WRITE
    for node, c in enumerate(conns):
        names = commands(take_output(lib, c))
        data = replies(names, node, vote=b":0\r\n")
        assert lib.redlock_conn_received(c, data, len(data), t + 1) == OK
    what, at = drive(lib, op, t + 1)
    assert what == WAIT | AWAITS | WRITE and at == t + 201, (what, at)
    for c in conns:
        assert commands(take_output(lib, c)) == ["EVALSHA"]   # the release
    assert drive(lib, op, t + 2) == (WAIT | AWAITS, t + 201)
    what, _ = drive(lib, op, t + 201)
    assert what == WAIT | WRITE
    assert lib.redlock_op_cancel(op, t + 202) == 1
    free_op(lib, op)
    lib.redlock_ctx_free(ctx)


def owe_a_release(lib, ctx, t):
    """A failed lock whose command to node 2 was written and then cut off:
    the release of what it may have taken there is owed to node 2."""
    op = lock_op(lib, ctx, "owed", t)
    drive(lib, op, t)
    conns = [lib.redlock_op_connect(op, i, t) for i in range(3)]
    for c in conns:
        lib.redlock_conn_connected(c, t)
    drive(lib, op, t)
    sent = [commands(take_output(lib, c)) for c in conns]
    lib.redlock_conn_lost(conns[2], b"connection lost: reset", t + 1)
    data = replies(sent[0], 0, vote=b":0\r\n")
    assert lib.redlock_conn_received(conns[0], data, len(data), t + 1) == OK
    what, _ = drive(lib, op, t + 1)
    assert what & DONE and lib.redlock_op_status(op) == ELOCKED
    # Nodes 0 and 1 answer the attempt and the release that undoes it.
    for node in (0, 1):
        assert commands(take_output(lib, conns[node])) == ["EVALSHA"]
        data = (replies(sent[node], node, vote=b":0\r\n") if node else b"") + b":1\r\n"
        assert lib.redlock_conn_received(conns[node], data, len(data), t + 2) == OK
        assert lib.redlock_conn_owed(conns[node]) == 0
    free_op(lib, op)


def test_owed_at_schedules_the_delivery_of_owed_releases(lib):
    """redlock_ctx_owed_at: nothing owed is never; an owed release is due a
    node deadline after it was owed (what it undoes lands first); a delivery
    that could not send it tries again 100 ms later at the soonest, or when
    the node's back-off ends; one sent is no longer owed; one past its time
    is given up."""
    t = 10000
    ctx = fake_ctx(lib, node_timeout_ms=50)
    assert lib.redlock_ctx_owed_at(ctx, t) == NEVER
    owe_a_release(lib, ctx, t)
    assert lib.redlock_ctx_owes(ctx) == 1
    assert lib.redlock_ctx_owed_at(ctx, t + 2) == t + 51
    # Due: a delivery asks for node 2 only; no connection given, it is tried again 100 ms on.
    op = P()
    assert lib.redlock_op_deliver(ctypes.byref(op), ctx, t + 60) == OK
    assert drive(lib, op, t + 60)[0] == CONNECT
    assert lib.redlock_op_next_wanted(op, 0) == 2 and lib.redlock_op_next_wanted(op, 3) == -1
    lib.redlock_op_no_conn(op, 2, b"no connection", t + 60)
    assert drive(lib, op, t + 60) == (DONE, NEVER)
    free_op(lib, op)
    assert lib.redlock_ctx_owed_at(ctx, t + 61) == t + 160
    # The node backs off past that: its back-off says when.
    c = P()
    for _ in range(4):   # 25, 50, 100, 200 ms
        assert lib.redlock_conn_new(ctypes.byref(c), ctx, 2) == OK
        lib.redlock_conn_lost(c, b"cannot connect: refused", t + 61)
        lib.redlock_conn_free(c)
    wait = lib.redlock_ctx_node_connect_wait(ctx, 2, t + 61)
    assert wait > 100
    assert lib.redlock_ctx_owed_at(ctx, t + 61) == t + 61 + wait
    # Then a delivery sends it on the connection it is given: nothing is owed.
    later = t + 61 + wait
    assert lib.redlock_ctx_owed_at(ctx, later) == later
    assert lib.redlock_op_deliver(ctypes.byref(op), ctx, later) == OK
    assert drive(lib, op, later)[0] == CONNECT
    conn = lib.redlock_op_connect(op, 2, later)
    assert conn
    assert lib.redlock_ctx_owes(ctx) == 0
    assert lib.redlock_ctx_owed_at(ctx, later) == NEVER
    lib.redlock_conn_connected(conn, later)
    what, _ = drive(lib, op, later)
    assert what == WAIT | WRITE
    assert commands(take_output(lib, conn))[-1] == "EVALSHA"
    # Its connection cut off unanswered: owed again, a node deadline on.
    lib.redlock_conn_lost(conn, b"connection lost: reset", later + 1)
    assert drive(lib, op, later + 1) == (DONE, NEVER)
    free_op(lib, op)
    assert lib.redlock_ctx_owes(ctx) == 1
    assert lib.redlock_ctx_owed_at(ctx, later + 1) == later + 51
    # Past its time (the lease, and a grace of a minute), it is given up.
    assert lib.redlock_ctx_owed_at(ctx, later + 1 + 10000 + 60000) == NEVER
    assert lib.redlock_ctx_owes(ctx) == 0
    lib.redlock_ctx_free(ctx)


def test_tls_settings_come_from_the_library(lib, tmp_path):
    """redlock_ctx_tls_*: the settings of the library's own TLS, from the
    tls_* options, with its checks; once read, the options are fixed."""
    uris = [b"rediss://10.0.0.1:6380", b"rediss://[::1]:6390", b"rediss://redis.example",
            b"redis://10.0.0.2"]
    ctx = P()
    assert lib.redlock_ctx_new(ctypes.byref(ctx), (ctypes.c_char_p * 4)(*uris), 4) == OK
    assert [lib.redlock_ctx_node_server_ip(ctx, i) for i in range(5)] == [1, 1, 0, 0, 0]
    assert lib.redlock_ctx_set_option(ctx, b"tls_server_name", b"redis.example") == OK
    assert [lib.redlock_ctx_node_server_ip(ctx, i) for i in range(3)] == [0, 0, 0]
    cert, key, ca = tmp_path / "client.crt", tmp_path / "client.key", tmp_path / "ca.crt"
    for f in (cert, key, ca):
        f.write_text("not checked here\n")
    missing = str(tmp_path / "missing.crt").encode()
    assert lib.redlock_ctx_set_option(ctx, b"tls_ca_file", missing) == OK
    assert lib.redlock_ctx_tls_check(ctx) == ETLS
    assert lib.redlock_errmsg().decode().startswith("tls_ca_file '")
    assert lib.redlock_ctx_set_option(ctx, b"tls_ca_file", b"") != OK, "fixed once read"
    lib.redlock_ctx_free(ctx)

    def made(**options):
        c = P()
        assert lib.redlock_ctx_new(ctypes.byref(c), (ctypes.c_char_p * 1)(uris[0]), 1) == OK
        for name, value in options.items():
            assert lib.redlock_ctx_set_option(c, name.encode(), str(value).encode()) == OK
        return c

    # Nothing checked: no CA is read, and a missing one is no failure.
    ctx = made(tls_verify=0, tls_ca_file=missing.decode())
    assert lib.redlock_ctx_tls_check(ctx) == OK
    assert lib.redlock_ctx_tls_verify(ctx) == 0
    assert lib.redlock_ctx_tls_ca_file(ctx) is None and lib.redlock_ctx_tls_ca_dir(ctx) is None
    assert lib.redlock_ctx_tls_cert_file(ctx) is None and lib.redlock_ctx_tls_key_file(ctx) is None
    assert lib.redlock_ctx_tls_min_version(ctx) == 0x0303
    lib.redlock_ctx_free(ctx)
    # The defaults: checked against the system's CAs.
    ctx = made()
    assert lib.redlock_ctx_tls_check(ctx) == OK and lib.redlock_ctx_tls_verify(ctx) == 1
    assert lib.redlock_ctx_tls_ca_file(ctx) is None and lib.redlock_ctx_tls_ca_dir(ctx) is None
    lib.redlock_ctx_free(ctx)
    # CAs and a client certificate whose key is in its own file.
    ctx = made(tls_ca_file=ca, tls_ca_dir=tmp_path, tls_cert_file=cert)
    assert lib.redlock_ctx_tls_check(ctx) == OK
    assert lib.redlock_ctx_tls_ca_file(ctx) == str(ca).encode()
    assert lib.redlock_ctx_tls_ca_dir(ctx) == str(tmp_path).encode()
    assert lib.redlock_ctx_tls_cert_file(ctx) == str(cert).encode()
    assert lib.redlock_ctx_tls_key_file(ctx) == str(cert).encode()
    lib.redlock_ctx_free(ctx)
    ctx = made(tls_cert_file=cert, tls_key_file=key)
    assert lib.redlock_ctx_tls_key_file(ctx) == str(key).encode()
    lib.redlock_ctx_free(ctx)
    ctx = made(tls_key_file=key)
    assert lib.redlock_ctx_tls_check(ctx) == ETLS
    assert lib.redlock_errmsg() == b"tls_key_file is set without tls_cert_file"
    lib.redlock_ctx_free(ctx)
    ctx = made(tls_cert_file=cert, tls_key_file=missing.decode())
    assert lib.redlock_ctx_tls_check(ctx) == ETLS
    assert lib.redlock_errmsg().decode().startswith("tls_key_file '")
    lib.redlock_ctx_free(ctx)
