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
import inspect
import weakref
from contextlib import asynccontextmanager
from types import TracebackType
from typing import (Any, AsyncContextManager, AsyncIterator, Callable, Dict, List, Optional,
                    Sequence, Set, Tuple, Type)

from . import _capi, capi
from ._aio_base import _now
from ._aio_driver import _Driver
from ._aio_keeper import _Keeper
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

# The public classes are here; the layers under them are private modules,
# each using only those after it: _aio_driver (the engine's driver: the
# connections, the operations under way, the releases owed), _aio_wakes
# (waiting locks woken by releases), _aio_keeper (the renewal of kept
# locks), _aio_tls (the loop's TLS) and _aio_base (the engine's calls).


def _check_status(status: int, message: str) -> None:
    if status != capi.REDLOCK_OK:
        raise error_for(status, message)


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
        self._finalizer = weakref.finalize(self, _capi.redlock_ctx_free, ctx)

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
        status, message, answer = await driver.run(_capi.redlock_op_ping(driver.ctx, _now()),
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
            op = _capi.redlock_op_unlock(handle, _now())
        except BaseException:
            _capi.redlock_handle_free(handle)
            raise
        # The C library tells, once the release started, whether the keys
        # could have expired before it.
        self._was_lost = self._was_lost or _capi.redlock_handle_lost(handle) == 1
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
        keeper = self._keeper
        if keeper is not None and not keeper.stopped:
            # Kept: through its keeper, which plans the next renewal from it.
            status, message = await keeper.renewer.extend(keeper, lease_ms)
            lost = keeper.error
            if lost is not None:
                raise LockNotHeld(capi.REDLOCK_ENOTHELD, f"the kept lock was lost: {lost}")
        else:
            op = _capi.redlock_op_extend(self._handle, lease_ms, _now())
            status, message, _ = await self._client._drive().run(op)
        _check_status(status, message)

    @property
    def validity(self) -> float:
        """Seconds of validity left; <= 0 when not held or lost."""
        if self._handle is None or self.lost:
            return 0.0
        return _capi.redlock_handle_validity_ms(self._handle) / 1000

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
            or _capi.redlock_handle_lost(handle) == 1

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
        return None if self._handle is None else _capi.redlock_handle_token(self._handle)

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
            answer = _capi.redlock_inspect_merge(answer, ttl_ms if locked else -2)
        return answer

    async def _inspect(self, name: str, force: bool) -> Tuple[int, int, int]:
        """Asks the nodes about name, or forces it open: (locked, ttl_ms,
        deleted), as the engine's redlock_op_answer."""
        driver = self._client._drive()
        make = _capi.redlock_op_force_unlock if force else _capi.redlock_op_inspect
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
        return _capi.redlock_op_lock(driver.ctx, self._names, lease_ms, wait_ms, _now())

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
        return _capi.redlock_op_lock_fair(driver.ctx, self._names[0], lease_ms, wait_ms, _now())


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
        return _capi.redlock_op_lock_rw(driver.ctx, self._names[0], self._mode, held, lease_ms,
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
        op = _capi.redlock_op_permits(driver.ctx, self._name, self._permits, _now())
        available: List[int] = []
        status, message, _ = await driver.run(
            op, before_free=lambda done: available.append(_capi.redlock_op_available(done)))
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
        return _capi.redlock_op_acquire_permit(driver.ctx, self._names[0],
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
