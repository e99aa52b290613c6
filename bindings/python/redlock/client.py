"""Redlock clients and their locks: the Python face of redlock.capi.

The rules every language follows (docs/locks.md):

- Reentry keeps the first terms: an RLock acquired again by the thread
  holding it counts a hold; the keys' TTL and the renewal stay as the first
  acquisition made them. Acquiring again after the hold was lost starts
  afresh: a new acquisition, whose holds count from 1.
- ``lock.lost`` is True whenever the keys can have expired while held: a
  kept lock whose renewal failed, or a lock with a lease whose validity ran
  out before it was released.
- The default wait: ``client.lock()``, ``with lock:`` and ``acquire()`` wait
  until acquired; ``try_lock()`` with no wait makes one attempt.
- A multi-lock is locked when any of its resources is, for the longest of
  their times to live.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import threading
import weakref
from contextlib import contextmanager
from types import TracebackType
from typing import (Any, Callable, ContextManager, Dict, Iterator, Optional, Set, Sequence, Tuple,
                    Type)

from . import _capi, capi
from ._front import (  # noqa: F401 - re-exported for the modules that import them from here
    _FOREVER_MS,
    DEFAULT_LEASE,
    OptionValue,
    _acquire_wait_ms,
    _ClientFront,
    _fences,
    _health,
    _lease_ms,
    _lease_or_kept,
    _LockFront,
    _log,
    _logger,
    _millis,
    _names,
    _new_ctx,
    _half_repr,
    _PermitFront,
    _ReadWriteFront,
    _Reentrant,
    _SemaphoreFront,
    _time_to_live,
    _wait_ms,
    _check_name,
)
from .errors import (Cancelled, ClientClosed, InvalidArgument, LockError, LockNotAcquired,
                     LockNotHeld, error_for)

# Kept locks by id, for the C library's report of a lost one (_lost): an id
# crosses into C, never a Python object.
_kept: Dict[int, _Held] = {}
_kept_ids = itertools.count(1)


def _lost(ident: int, status: int, message: str) -> None:
    """Called by redlock.capi, on the client's thread, when the kept lock
    with this id is lost (renewal failed for good, or its validity ran out)."""
    held = _kept.get(ident)
    if held is not None:
        held.lose(error_for(status, message))


class _Gate:
    """The calls in flight on one C client, its acquisitions not yet freed,
    and its closing (docs/locks.md, "A closed client"). Every call that
    gives C the client's ctx runs between enter() and leave(), every call on
    a handle through its _Held; close() refuses new calls at once, ends the
    waits under way (redlock_py_closing: at the interrupt check's next
    look), waits for the calls in flight, releases what is still held, and
    frees the ctx only then: no call ever reaches a freed ctx or handle,
    whichever thread makes it. The gate refers to no Lock nor client, so
    that a client's finalizer may hold it (Redlock: a collected client is
    closed, and so is one left open at exit)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._calls = 0
        self.closing = False
        self._freed = False
        # Every _Held of the client not yet freed.
        self.live: Set[_Held] = set()
        # Guards each _Held's handle and its count of calls under way; a
        # free waits on handles_free for that count to reach 0.
        self.handles = threading.Lock()
        self.handles_free = threading.Condition(self.handles)

    def enter(self, what: str) -> Any:
        """A caller's call: the ctx, counted in flight; ClientClosed (naming
        what) once close() began."""
        with self._mutex:
            if self.closing:
                raise ClientClosed(what)
            self._calls += 1
        return self.ctx

    def leave(self) -> None:
        with self._mutex:
            self._calls -= 1
            if self.closing and self._calls == 0:
                self._cond.notify_all()

    def close(self) -> None:
        """Redlock.close(): once; a second call returns at once."""
        with self._mutex:
            if self.closing:
                return
            self.closing = True
        capi.redlock_py_closing(self.ctx, 1)
        self._drain(())
        for held in list(self.live):
            held.discard()
        self._drain(self.live)  # and the releases that others began
        self._freed = True
        capi.redlock_ctx_free(self.ctx)
        capi.redlock_py_closing(self.ctx, 0)

    def _drain(self, live: Any) -> None:
        """Waits until no call is in flight and nothing is in live."""
        with self._mutex:
            while self._calls or live:
                self._cond.wait(0.05)


class Redlock(_ClientFront):
    """A client for N independent Redis masters.

    ``nodes`` is a list of URIs, ``redis://[[user]:password@]host[:port][/db]``
    (``rediss://`` over TLS), ``unix://[[user]:password@]/path.sock[?db=N]``, or
    for a Sentinel group (one node, its master, followed through failovers)
    ``redis-sentinel://[[user]:password@]host[:port][,host[:port]...]?sentinelMasterId=NAME``;
    ``options`` are the C
    library's, by name (docs/options.md; ``get_option`` reads one
    back). Nothing connects until the first lock call.

    A client may be shared by threads. ``close()`` (or leaving a ``with``
    block) releases, best effort, every lock still held through the client and
    closes its connections; any thread may call it while others use the
    client: their waits end and every call after it raises ClientClosed
    (docs/locks.md, "A closed client"). A client that is collected is closed
    the same way.
    """

    def __init__(self, nodes: Sequence[str], **options: OptionValue) -> None:
        ctx = self._setup(nodes, options)
        # The state get_rlock() objects of one name share, while any is alive.
        self._rlocks: weakref.WeakValueDictionary[str, _Shared] = weakref.WeakValueDictionary()
        self._rlocks_mutex = threading.Lock()
        self._gate = gate = _Gate(ctx)
        # Closes the client once it is collected, or at exit if still open
        # (its locks released first, then the ctx freed).
        self._closer = weakref.finalize(self, gate.close)

    def get_lock(self, name: str) -> Lock:
        """A lock on one resource (not acquired yet)."""
        self._context()
        return Lock(self, _names(name))

    def get_multi_lock(self, *names: str) -> Lock:
        """A lock on several resources, acquired all together or not at all."""
        self._context()
        return Lock(self, _names(*names))

    def get_read_write_lock(self, name: str) -> ReadWriteLock:
        """A read-write lock (not acquired yet): any number of readers or
        one writer (see ReadWriteLock)."""
        self._context()
        return ReadWriteLock(self, _check_name(name))

    def get_fair_lock(self, name: str) -> Lock:
        """A fair lock on one resource (not acquired yet): its waiters get
        it in the order they arrived, across clients and nodes (as Redisson's
        RFairLock). A waiter that gives up leaves the queue (its place lapses
        soon after its last attempt). It is the plain lock of its name: a
        plain lock of the name excludes it, and is taken without waiting its
        turn. Otherwise a Lock as get_lock()'s (try_lock, acquire, unlock,
        ``with``, kept without a lease, lost, on_lost, extend); no fence."""
        self._context()
        return _FairLock(self, _names(name))

    def get_semaphore(self, name: str, permits: int) -> Semaphore:
        """A semaphore of ``permits`` permits (an int from 1 to 10000): at
        most that many held at once, by all its clients together (see
        Semaphore). InvalidArgument at once for a bad number."""
        self._context()
        return Semaphore(self, name, permits)

    def synchronize(self, name: str, wait: Optional[float] = None, lease: Optional[float] = None,
                    fair: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator: each call of the function runs under the lock
        ``name``, as ``with client.lock(name, lease=lease, wait=wait):``
        (kept while it runs when there is no lease; without a wait, waits as
        long as it takes); with ``fair=True``, under the fair lock of the
        name (get_fair_lock: the calls waiting for it get it in the order
        they came). A call raises LockNotAcquired when someone else still
        held the lock after ``wait`` seconds, NoQuorum when too few nodes
        answered, and LockNotHeld when the lock was lost while the function
        ran (unless the function raised: its exception goes on). For
        coroutine functions, use redlock.asyncio's client."""
        if not _check_name(name):
            raise InvalidArgument(capi.REDLOCK_EINVAL, "synchronize: the lock name is empty")
        _wait_ms(wait)
        self._context()
        get = self.get_fair_lock if fair else self.get_lock

        def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
            if inspect.iscoroutinefunction(function):
                raise TypeError(f"synchronize: {function.__qualname__} is a coroutine function; "
                                "decorate it with redlock.asyncio.Redlock.synchronize")

            @functools.wraps(function)
            def run(*args: Any, **kwargs: Any) -> Any:
                with self._scoped(get, name, lease, wait):
                    return function(*args, **kwargs)
            return run
        return decorate

    def get_rlock(self, name: str) -> RLock:
        """A reentrant lock on one resource, like threading.RLock: the
        thread holding it may acquire it again (through this object or any
        other get_rlock() of the same name from this client), and holds it
        until it has released it as many times. Acquiring it again keeps
        the first terms: the lease and the renewal stay as the first
        acquisition made them."""
        self._context()
        _check_name(name)
        with self._rlocks_mutex:
            shared = self._rlocks.get(name)
            if shared is None:
                shared = self._rlocks[name] = _Shared(Lock(self, (name,)))
        return RLock(shared)

    def lock(self, name: str, lease: Optional[float] = None,
             wait: Optional[float] = None) -> ContextManager[Lock]:
        """``with client.lock(name, lease=..., wait=...) as lock:`` runs the
        block under the lock and releases it after; without a lease the lock
        is kept (renewed) until then. Without a wait it waits until acquired
        (as ``with lock:`` and Redisson's lock()); a wait as long as it takes
        ends with NoQuorum once the nodes have failed for the client's
        ``unavailable_timeout_ms``.

        Raises LockNotAcquired when someone else still holds it after
        ``wait`` seconds, NoQuorum when too few nodes answered. On leaving the
        block, LockNotHeld if the lock had been lost meanwhile (unless the
        block raised: its exception goes on)."""
        return self._scoped(self.get_lock, name, lease, wait)

    @contextmanager
    def _scoped(self, get: Callable[[str], Lock], name: str, lease: Optional[float],
                wait: Optional[float]) -> Iterator[Lock]:
        """lock()'s block, under the lock get(name) makes: get_lock's, or
        get_fair_lock's (synchronize(fair=True))."""
        lock = get(name)
        lock._acquire(_wait_ms(wait), *lock._lease(lease))
        try:
            yield lock
        except BaseException as exc:
            lock.__exit__(type(exc), exc, exc.__traceback__)
            raise
        lock.__exit__(None, None, None)

    def ping(self) -> int:
        """Sends PING to every node at once and waits for each (up to its
        deadline): the number of nodes that answered and count towards a
        quorum. Raises NoQuorum (or AuthError) when fewer than a quorum do;
        health() then says which nodes failed and why."""
        return self._with_ctx(capi.redlock_ctx_ping)

    def close(self) -> None:
        """Releases the locks still held (best effort: a node that does not
        answer keeps its key until the lease ends), ends their renewal and
        closes the connections. Calls under way in other threads end first:
        a wait for a lock ends with ClientClosed. Every call after it raises
        ClientClosed. Calling it again does nothing."""
        self._closer()

    def __enter__(self) -> Redlock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _context(self) -> Any:
        if self._gate.closing:
            raise ClientClosed()
        return self._ctx

    def _with_ctx(self, call: Callable[..., Any], *args: Any) -> Any:
        ctx = self._gate.enter("")
        try:
            return call(ctx, *args)
        finally:
            self._gate.leave()


class _Held:
    """One C handle of an acquired lock, freed exactly once: by release(), by
    discard() (close() discards them all), or once the Lock owning it is
    collected (released first, best effort): whoever takes the handle
    (_take) frees it. The free waits for the C calls on the handle under way
    (use()) and none starts after it began: none reaches a freed handle."""

    __slots__ = ("gate", "handle", "_in_use", "_owner", "_id", "_lost_error", "_was_lost")

    def __init__(self, owner: Lock, gate: _Gate, handle: Any) -> None:
        self.gate = gate
        self.handle = handle
        self._in_use = 0
        # The owner, weakly: its collection discards the acquisition.
        self._owner: Optional[weakref.ref[Lock]] = weakref.ref(owner, self._owner_gone)
        self._id = 0  # in _kept while kept
        self._lost_error: Optional[LockError] = None
        self._was_lost = False
        gate.live.add(self)

    def use(self, call: Callable[..., Any], *args: Any, default: Any = None) -> Any:
        """call(handle, *args), or default once the handle is freed (or
        its free began)."""
        gate = self.gate
        with gate.handles:
            handle = self.handle
            if handle is None:
                return default
            self._in_use += 1
        try:
            return call(handle, *args)
        finally:
            with gate.handles:
                self._in_use -= 1
                if self._in_use == 0 and self.handle is None:
                    gate.handles_free.notify_all()

    def keep(self) -> None:
        """Has the client's thread renew the lock until it is released."""
        self._id = next(_kept_ids)
        _kept[self._id] = self
        self.use(capi.redlock_py_watch, self._id)

    def lose(self, error: LockError) -> None:
        """The C library's report that this kept lock was lost."""
        self._lost_error = error
        ref = self._owner
        owner = None if ref is None else ref()
        if owner is not None and owner._held is self:
            owner._tell_lost(error)

    def lost(self) -> bool:
        if self._lost_error is not None:
            return True
        return self.use(lambda handle: _capi.redlock_handle_lost(handle) == 1,
                        default=self._was_lost)

    def kept(self) -> bool:
        return self._id != 0

    def lost_error(self) -> LockError:
        return self._lost_error or LockNotHeld(capi.REDLOCK_ENOTHELD, "the kept lock was lost")

    def release(self) -> None:
        """Unlocks on the nodes and frees the handle. LockNotHeld when the
        lock had expired or been lost; ClientClosed when the client was
        closed (which released it)."""
        if self.gate.closing:
            raise ClientClosed("unlock")
        handle = self._take()
        if handle is None:
            raise ClientClosed("unlock")
        try:
            # Once unlocked, the C library reports no loss any more.
            self._was_lost, error = _capi.redlock_py_release(handle, 0)
        finally:
            self._forget()
        if error is not None:
            raise error

    def discard(self) -> None:
        """Unlocks on the nodes, ignoring failures, and frees the handle."""
        handle = self._take()
        if handle is not None:
            try:
                self._was_lost = _capi.redlock_py_release(handle, 1)[0]
            finally:
                self._forget()

    def extend(self, lease_ms: int) -> None:
        if self.gate.closing:
            raise ClientClosed("extend")
        if not self.use(lambda handle: capi.redlock_extend(handle, lease_ms) or True):
            raise ClientClosed("extend")

    def validity_ms(self) -> int:
        return self.use(capi.redlock_handle_validity_ms, default=0)

    def token(self) -> Optional[str]:
        return self.use(capi.redlock_handle_token)

    def _owner_gone(self, _ref: Any) -> None:
        self.discard()

    def _take(self) -> Any:
        """The handle, taken to be freed once the calls on it under way
        ended; None when another took it first."""
        gate = self.gate
        with gate.handles:
            handle, self.handle = self.handle, None
            if handle is not None:
                # What lost() says from here on (the release may find more).
                self._was_lost = _capi.redlock_handle_lost(handle) == 1
                while self._in_use:
                    gate.handles_free.wait()
        return handle

    def _forget(self) -> None:
        """The handle is freed: nothing refers to this acquisition any more
        but its Lock (for lost)."""
        self.gate.live.discard(self)
        _kept.pop(self._id, None)
        self._owner = None


class Lock(_LockFront):
    """A distributed lock on one or more resources, from Redlock.get_lock()
    or Redlock.get_multi_lock(); or the fair lock of one, from
    Redlock.get_fair_lock().

    Times are seconds (float). The lease is how long the lock stays held
    unless extended or released; ``validity`` is what remains of it.

    Without a lease (the default of try_lock(), acquire(), ``with lock:`` and
    ``client.lock()``) the lock is kept: it is taken for the client's
    ``watchdog_lease_ms`` and the client's own thread renews it every third
    of that until it is released. Should renewal fail for good (too few
    nodes answer) the lock is lost no later than its validity reaching 0:
    ``lost`` turns True and the callbacks given to on_lost() run. With a
    lease, nothing renews the lock: it expires when the lease runs out, and
    ``lost`` turns True then if it was not released first (its keys can
    have expired while it was held).

    The object holds at most one acquisition, and works like
    ``threading.Lock``: ``acquire``/``release``/``locked``, ``with lock:``.
    It is not reentrant: acquiring a lock this object already holds waits
    until the lease runs out (Redlock.get_rlock() gives a reentrant one).
    Threads may share it, like a threading.Lock.

    A Lock that is collected while held is released on the nodes, best effort
    (a weak reference's callback runs the release); release explicitly
    rather than rely on it.
    """

    _client: Redlock

    def __init__(self, client: Redlock, names: Tuple[str, ...]) -> None:
        super().__init__(client, names)
        self._mutex = threading.Lock()  # guards _held; never held while waiting for a lock
        self._held: Optional[_Held] = None
        self._last: Optional[_Held] = None  # the latest acquisition, even once released

    def try_lock(self, wait: float = 0.0, lease: Optional[float] = None) -> bool:
        """Tries to acquire the lock for ``lease`` seconds (None: kept until
        released), retrying for up to ``wait`` seconds (0, the default: one
        attempt).

        Returns True when acquired, False when someone else held it all
        along, like Redisson's tryLock. Failures raise: too few nodes
        answered (NoQuorum: an outage is not contention), bad credentials
        (AuthError), a key that is not a lock (WrongTypeError), a lease used
        up while acquiring (LockExpired), invalid arguments (TypeError,
        ValueError)."""
        wait_ms = _millis(wait, "wait")
        try:
            self._acquire(wait_ms, *self._lease(lease))
        except LockNotAcquired:
            return False
        return True

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """threading.Lock.acquire: waits up to ``timeout`` seconds (-1: as
        long as it takes; ``blocking=False``: one attempt) and returns whether
        it acquired the lock, kept until released. Errors raise as in
        try_lock(): a wait as long as it takes ends with NoQuorum once the
        nodes have failed for the client's ``unavailable_timeout_ms``."""
        wait_ms = _acquire_wait_ms(blocking, timeout)
        try:
            self._acquire(wait_ms, *self._lease(None))
        except LockNotAcquired:
            return False
        return True

    def unlock(self) -> None:
        """Releases the lock on the nodes. Raises LockNotHeld when it was not
        held, or had expired or been lost (the critical section may not have
        been exclusive); it is not held afterwards either way."""
        if self._client._gate.closing:
            raise ClientClosed("unlock")
        with self._mutex:
            held, self._held = self._held, None
        if held is None:
            raise LockNotHeld(capi.REDLOCK_ENOTHELD, "the lock is not held")
        held.release()

    release = unlock

    def extend(self, lease: float) -> None:
        """Renews the lease to ``lease`` seconds from now. Raises LockNotHeld
        when the lock has expired, was lost or released."""
        lease_ms = _lease_ms(lease)
        if self._client._gate.closing:
            raise ClientClosed("extend")
        with self._mutex:
            if self._held is None:
                raise LockNotHeld(capi.REDLOCK_ENOTHELD, "the lock is not held")
            self._held.extend(lease_ms)

    @property
    def validity(self) -> float:
        """Seconds of validity left; <= 0 when not held (expired, lost,
        released or never acquired)."""
        with self._mutex:
            return 0.0 if self._held is None else self._held.validity_ms() / 1000

    @property
    def token(self) -> Optional[str]:
        """The random token of the current acquisition (the value stored in
        the Redis keys, 32 hex characters), None when released."""
        with self._mutex:
            return None if self._held is None else self._held.token()

    @property
    def lost(self) -> bool:
        """Whether the latest acquisition was lost: its keys can have expired
        while it was held. True from the moment a kept lock's renewal failed
        for good or the validity of any acquisition (kept, or with a lease)
        ran out before its release, until the lock is acquired again."""
        last = self._last
        return last is not None and last.lost()

    def on_lost(self, callback: Callable[[Lock, LockError], Any]) -> None:
        """Calls ``callback(lock, error)`` when a kept acquisition of this
        lock is lost (error: LockNotHeld when a quorum says the lock is no
        longer ours, LockExpired when the nodes failed until its validity ran
        out), for this and every later acquisition. A lock with a lease has
        no renewal to fail: ``lost`` tells when its lease ran out.

        The callback runs on the client's thread, which renews every kept lock
        of the client: it must return quickly and not call into the client
        (hand the news to your own thread or event loop). If the current
        kept acquisition is lost already, the callback runs at once, here."""
        super().on_lost(callback)

    def locked(self) -> bool:
        """Whether the lock is held, by anyone: asks the nodes (a quorum of
        them has it under one token), as redis-py's Lock.locked() does. A
        multi-lock is locked when any of its resources is (the C library's
        rule, redlock_inspect_multi). Raises NoQuorum when too few nodes
        answer to tell. is_held() is this object's own hold."""
        return bool(self._client._with_ctx(capi.redlock_inspect_multi, self._names)[0])

    def remain_time_to_live(self) -> Optional[float]:
        """Seconds for which a quorum of the nodes still has the lock,
        whoever holds it (Redisson's remainTimeToLive); None when nobody
        holds it, math.inf when its key has no expiry. For a multi-lock, the
        longest of its locked resources' (redlock_inspect_multi). Raises
        NoQuorum when too few nodes answer to tell."""
        return _time_to_live(self._client._with_ctx(capi.redlock_inspect_multi,
                                                    self._names)[1])

    def force_unlock(self) -> bool:
        """Deletes the lock on every node whatever its token, and wakes the
        clients waiting for it: for an operator whose lock holder is known
        to be gone. Dangerous: a holder still alive goes on as if it held
        the lock while another takes it. True when a lock was deleted on
        some node. Raises NoQuorum when too few nodes answered to be sure it
        is gone."""
        return sum(self._client._with_ctx(capi.redlock_force_unlock, name)
                   for name in self._names) > 0

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]],
                 exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        """Releases the lock: raises LockNotHeld if it had been lost, unless
        the block raised (its exception goes on)."""
        if exc_type is None:
            self.unlock()
        else:
            self._discard()

    @property
    def fences(self) -> Dict[str, int]:
        """The fence of each resource of the current acquisition, by name;
        empty when not held or taken without fencing."""
        return self._on_handle(_fences, self._names, default={})

    def _current_handle(self) -> Any:
        with self._mutex:
            return None if self._held is None else self._held.handle

    def _on_handle(self, call: Callable[..., Any], *args: Any, default: Any = None) -> Any:
        with self._mutex:
            held = self._held
        return default if held is None else held.use(call, *args, default=default)

    def _lost_now(self) -> Optional[LockError]:
        held = self._held
        if held is not None and held.kept() and held.lost():
            return held.lost_error()
        return None

    def _discard(self) -> None:
        with self._mutex:
            held, self._held = self._held, None
        if held is not None:
            held.discard()

    def _acquire(self, wait_ms: Optional[int], lease_ms: int, keep: bool) -> None:
        """Acquires, with the C library retrying for wait_ms (None: until it
        succeeds), or raises the error of the last attempt; keeps the lock
        when asked. Signal handlers run during the wait: Ctrl-C raises
        KeyboardInterrupt, and the attempt under way is released."""
        gate = self._client._gate
        ctx = gate.enter("acquire")
        try:
            wait = _FOREVER_MS if wait_ms is None else wait_ms
            try:
                handle = self._lock_call(ctx, lease_ms, wait)
            except Cancelled:
                if gate.closing:  # close() ended the wait
                    raise ClientClosed("acquire") from None
                raise
            self._hold(handle, keep)
        finally:
            gate.leave()

    def _hold(self, handle: Any, keep: bool) -> None:
        held = _Held(self, self._client._gate, handle)
        if keep:
            try:
                held.keep()
            except BaseException:
                held.discard()
                raise
        with self._mutex:
            old, self._held = self._held, held
            self._last = held
        if old is not None:
            # The lease of the previous acquisition had run out.
            old.discard()

    def _tell_lost(self, error: LockError) -> None:
        """Runs the on_lost callbacks (on the client's thread); the first
        exception one raised is raised after all ran. No _mutex here: its
        holder may be waiting in C for this very thread."""
        failures = self._run_callbacks(error)
        if failures:
            raise failures[0]

    def _lock_call(self, ctx: Any, lease_ms: int, wait_ms: int) -> Any:
        if len(self._names) == 1:
            return _capi.redlock_lock(ctx, self._names[0], lease_ms, wait_ms)
        return capi.redlock_lock_multi(ctx, self._names, lease_ms, wait_ms)


class _FairLock(Lock):
    """A fair lock (Redlock.get_fair_lock): a Lock taken with
    redlock_lock_fair, in its waiters' order of arrival."""

    _KIND = " (fair)"

    def _lock_call(self, ctx: Any, lease_ms: int, wait_ms: int) -> Any:
        return capi.redlock_lock_fair(ctx, self._names[0], lease_ms, wait_ms)


class ReadWriteLock(_ReadWriteFront[Lock]):
    """A read-write lock, from Redlock.get_read_write_lock(name): its
    read_lock() is held by any number of readers at once, its write_lock()
    by one writer with no reader (as Redisson's RReadWriteLock). Each is a
    Lock (try_lock, unlock, ``with``, lost, extend, ...), each acquisition
    with its own token and lease, kept (renewed) when no lease is given.
    The write lock and a plain lock of the same name exclude each other.

    The two locks of one ReadWriteLock object belong together: holding its
    write lock, its read lock may be taken too (a downgrade: release the
    write lock after, and no other writer comes in between); holding its
    read lock, its write lock is refused with InvalidArgument (no upgrade:
    two readers upgrading would wait for each other for ever). Over several
    nodes each takes a quorum; a read quorum and a write quorum always share
    a node, where the conflict shows."""

    def __init__(self, client: Redlock, name: str) -> None:
        # A call given one of the pair's handles, and the release that
        # frees it, one at a time.
        self._mutex = threading.Lock()
        super().__init__(_ReadWriteHalf(self, client, name, capi.REDLOCK_READ),
                         _ReadWriteHalf(self, client, name, capi.REDLOCK_WRITE))


class _ReadWriteHalf(Lock):
    """The read or the write lock of a ReadWriteLock."""

    def __init__(self, pair: ReadWriteLock, client: Redlock, name: str, mode: int) -> None:
        super().__init__(client, (name,))
        self._pair = pair
        self._mode = mode

    def _lock_call(self, ctx: Any, lease_ms: int, wait_ms: int) -> Any:
        pair = self._pair
        with pair._mutex:
            held = pair._other(self._mode)._current_handle()
            if held is not None:   # a downgrade, or an upgrade refused
                return capi.redlock_lock_rw(ctx, self._names[0], self._mode, held, lease_ms,
                                            wait_ms)
        return capi.redlock_lock_rw(ctx, self._names[0], self._mode, None, lease_ms, wait_ms)

    def unlock(self) -> None:
        with self._pair._mutex:
            super().unlock()

    release = unlock

    def __repr__(self) -> str:
        return _half_repr(self, self._mode)


class Semaphore(_SemaphoreFront):
    """A semaphore, from Redlock.get_semaphore(name, permits): at most
    ``permits`` permits of it held at once, across every client and machine
    (as Redisson's RPermitExpirableSemaphore). Each permit is a Permit with
    an id and a lease of its own, kept (renewed) when no lease is given, and
    reclaimed when its lease runs out. Every client of the semaphore must
    give the same number of permits: a node that has it under another number
    refuses with InvalidArgument, whose message names both numbers. A
    semaphore and a lock of the same name do not exclude each other."""

    _client: Redlock

    def try_acquire(self, wait: float = 0.0, lease: Optional[float] = None) -> Optional[Permit]:
        """Tries to take a permit for ``lease`` seconds (None: kept until
        released), retrying for up to ``wait`` seconds (0, the default: one
        attempt). The Permit, or None when every permit stayed taken until
        the wait ended; other failures raise as Lock.try_lock's do."""
        permit = Permit(self)
        # Lock's try_lock, which a Permit refuses to its users.
        return permit if Lock.try_lock(permit, wait, lease) else None

    def acquire(self, lease: Optional[float] = None) -> Permit:
        """Takes a permit for ``lease`` seconds (None: kept until released),
        waiting as long as it takes (as Lock.acquire: ended by NoQuorum once
        the nodes have failed for the client's ``unavailable_timeout_ms``)."""
        permit = Permit(self)
        permit._acquire(None, *permit._lease(lease))
        return permit

    @contextmanager
    def permit(self, wait: Optional[float] = None,
               lease: Optional[float] = None) -> Iterator[Permit]:
        """``with semaphore.permit(wait=..., lease=...) as permit:`` runs the
        block with a permit and releases it after (as ``client.lock()``: kept
        until then without a lease; without a wait, waits until one is had).
        Raises LockNotAcquired when every permit stayed taken for ``wait``
        seconds; on leaving, LockNotHeld if the permit had been lost (unless
        the block raised: its exception goes on)."""
        permit = Permit(self)
        permit._acquire(_wait_ms(wait), *permit._lease(lease))
        with permit:
            yield permit

    def available_permits(self) -> int:
        """How many permits could be taken now: the permits free on a
        permit's quorum of the nodes. For display: it may be stale as soon
        as it is given. NoQuorum when too few nodes answered."""
        return self._client._with_ctx(capi.redlock_permits_available, self._name,
                                      self._permits)


class Permit(_PermitFront, Lock):
    """A permit of a Semaphore, from its try_acquire(), acquire() or
    permit(): a Lock taken once (release, extend, validity, lost, on_lost,
    ``with``: leaving the block releases it), with ``id``, its token.
    Without a lease it is kept (renewed by the client's thread) until
    released, and lost as a kept lock is."""

    _semaphore: Semaphore

    def __enter__(self) -> Permit:
        """The permit is held already: ``with`` only releases it on leaving."""
        return self

    def _lock_call(self, ctx: Any, lease_ms: int, wait_ms: int) -> Any:
        return capi.redlock_acquire_permit(ctx, self._names[0], self._semaphore.permits,
                                           lease_ms, wait_ms)

    def _hold(self, handle: Any, keep: bool) -> None:
        self._id = capi.redlock_handle_token(handle)
        super()._hold(handle, keep)


class _Shared(_Reentrant[Lock]):
    """What the RLock objects of one name share (_Reentrant), and the mutex
    that serializes its calls: never held while waiting for the nodes."""

    def __init__(self, lock: Lock) -> None:
        super().__init__(lock)
        self.mutex = threading.Lock()


class RLock:
    """A reentrant distributed lock, from Redlock.get_rlock(): the surface
    of threading.RLock (``acquire(blocking, timeout)``, ``release()``,
    ``with``), plus try_lock(wait, lease). The first acquisition by a thread
    takes the lock on the nodes (kept until released when no lease is
    given); later ones by the same thread only count a hold and keep the
    first terms (the keys' TTL and the renewal are not changed), and the last
    release unlocks it on the nodes. Acquiring again after the hold was
    lost (its lease ran out, its renewal failed) starts afresh, as
    Redisson's does: a new acquisition, whose holds count from 1 (the lost
    hold's releases are forgotten); until it succeeds, ``lock.lost`` and the
    release (LockNotHeld) tell the loss."""

    def __init__(self, shared: _Shared) -> None:
        self._shared = shared

    @property
    def lock(self) -> Lock:
        """The underlying Lock (lost, on_lost, validity, token)."""
        return self._shared.lock

    def try_lock(self, wait: float = 0.0, lease: Optional[float] = None) -> bool:
        """As Lock.try_lock; True at once when this thread holds it already
        (its lease and renewal stay what the first acquisition made them)."""
        _millis(wait, "wait")
        self._shared.lock._lease(lease)
        if self._reenter():
            return True
        return self._first(self._shared.lock.try_lock(wait, lease))

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """threading.RLock.acquire, for the lock on the nodes: waits until
        acquired unless told otherwise."""
        _acquire_wait_ms(blocking, timeout)
        if self._reenter():
            return True
        return self._first(self._shared.lock.acquire(blocking, timeout))

    def release(self) -> None:
        """Counts one release; the last one unlocks on the nodes (raising
        LockNotHeld, as Lock.unlock does, if the lock had been lost).
        RuntimeError when this thread does not hold it."""
        shared = self._shared
        with shared.mutex:
            last = shared.leave(threading.get_ident())
        if last:
            shared.lock.unlock()

    unlock = release

    def get_hold_count(self) -> int:
        """How many times the calling thread holds it (0: not at all)."""
        shared = self._shared
        with shared.mutex:
            return shared.holds(threading.get_ident())

    def is_held_by_current_thread(self) -> bool:
        return self.get_hold_count() > 0

    def locked(self) -> bool:
        """Whether the lock is held, by anyone: asks the nodes (Lock.locked)."""
        return self._shared.lock.locked()

    def remain_time_to_live(self) -> Optional[float]:
        """Lock.remain_time_to_live: the lock's time left on the nodes."""
        return self._shared.lock.remain_time_to_live()

    def force_unlock(self) -> bool:
        """Lock.force_unlock (dangerous: read it there). A thread's holds of
        this lock still count; its last release finds the lock gone and
        raises LockNotHeld."""
        return self._shared.lock.force_unlock()

    def __enter__(self) -> RLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<redlock.RLock {self._shared.lock.names[0]!r} held {self.get_hold_count()} times>"

    def _reenter(self) -> bool:
        shared = self._shared
        with shared.mutex:
            return shared.reenter(threading.get_ident())

    def _first(self, acquired: bool) -> bool:
        if acquired:
            shared = self._shared
            with shared.mutex:
                shared.first(threading.get_ident())
        return acquired
