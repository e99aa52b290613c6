"""Redlock clients and their locks: the Python face of redlock.capi."""

from __future__ import annotations

import itertools
import logging
import math
import threading
import weakref
from collections.abc import Iterable
from contextlib import contextmanager
from numbers import Real
from types import TracebackType
from urllib.parse import unquote
from typing import (Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Type,
                    Union)

from . import capi
from .errors import LockError, LockNotAcquired, LockNotHeld, error_for

#: The default of the option ``watchdog_lease_ms``, in seconds: the lease of
#: a kept lock (one acquired without a lease), renewed every third of it.
DEFAULT_LEASE = 30.0

# "As long as it takes": the C library saturates a wait this long.
_FOREVER_MS = 2**62

OptionValue = Union[str, int, float]


def _millis(seconds: Any, what: str) -> int:
    kind = type(seconds)
    # int and float skip the abstract-class check, which costs more than the rest.
    if kind is not int and kind is not float and (kind is bool or not isinstance(seconds, Real)):
        raise TypeError(f"{what} must be a number of seconds, not {type(seconds).__name__}")
    value = float(seconds)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number of seconds >= 0, not {seconds!r}")
    return math.ceil(value * 1000)


def _lease_ms(lease: Any) -> int:
    ms = _millis(lease, "lease")
    if ms == 0 or ms > capi.REDLOCK_MAX_TTL_MS:
        raise ValueError(f"lease must be above 0 and at most {capi.REDLOCK_MAX_TTL_MS / 1000} "
                         f"seconds, not {lease!r}")
    return ms


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


def _lease_or_kept(lease: Optional[float], kept_ms: int) -> Tuple[int, bool]:
    """The lease in milliseconds, and whether the lock is to be kept (no
    lease given: the client's watchdog_lease_ms, renewed)."""
    if lease is None:
        return kept_ms, True
    return _lease_ms(lease), False


def _time_to_live(answers: Iterable[Sequence[int]]) -> Optional[float]:
    """The longest time to live, in seconds, among redlock_inspect answers
    (locked, ttl_ms) of a lock's resources: None when none is locked,
    math.inf when one has no expiry."""
    left = [math.inf if ttl_ms < 0 else ttl_ms / 1000 for locked, ttl_ms in answers if locked]
    return max(left) if left else None


def _fences(handle: Any, names: Tuple[str, ...]) -> Dict[str, int]:
    """The fence of each resource of a held lock; {} when it was taken
    without fencing (the C library says 0)."""
    if handle is None:
        return {}
    fences = {name: capi.redlock_handle_fence(handle, i) for i, name in enumerate(names)}
    return fences if all(fences.values()) else {}


#: The library's events go to this logger (README: "Logging and health").
#: It has a NullHandler and nothing else, as libraries do: the application
#: decides where records go, and one that configures no logging gets none of
#: them on stderr from logging's last-resort handler.
_logger = logging.getLogger("redlock")
_logger.addHandler(logging.NullHandler())


def _log(level: int, event: str, message: str) -> None:
    """Called by redlock.capi with each event of a client, on whichever
    thread emitted it: hands it to the "redlock" logger. The record's message
    is "event message"; ``record.redlock_event`` is the event's name."""
    _logger.log(level, "%s %s", event, message, extra={"redlock_event": event})


def _log_events(ctx: Any) -> None:
    """Sends the client's events to the "redlock" logger, from the level
    it is enabled for now; with that level above ERROR nothing is sent (and
    nothing is formatted)."""
    level = _logger.getEffectiveLevel()
    if level <= logging.ERROR:
        capi.redlock_py_set_log(ctx, level)


_HEALTH_NUMBERS = ("for_ms", "retry_in_ms", "guard_ms", "commands", "failures", "timeouts")


def _health(ctx: Any) -> List[Dict[str, Any]]:
    """redlock_ctx_health's lines, one dict per node (README: "Logging and
    health"): node, state, last_error (None for none), rtt_ms (None before
    any reply), the counters and times as ints, run_id and version."""
    text = capi.redlock_swig_health(ctx)
    if text is None:
        raise MemoryError("redlock_ctx_health")
    nodes = []
    for line in text.splitlines():
        node: Dict[str, Any] = {}
        for field in line.split(" "):
            key, _, value = field.partition("=")
            node[key] = unquote(value)
        for key in _HEALTH_NUMBERS:
            node[key] = int(node[key])
        rtt = float(node["rtt_ms"])
        node["rtt_ms"] = None if rtt < 0 else rtt
        node["last_error"] = node["last_error"] or None
        nodes.append(node)
    return nodes


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a lock name must be str, not {type(name).__name__}")
    return name


def _check_nodes(nodes: Any) -> List[str]:
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Iterable):
        raise TypeError(f"nodes must be a list of URI strings, not {type(nodes).__name__}")
    uris = list(nodes)
    for uri in uris:
        if not isinstance(uri, str):
            raise TypeError(f"a node URI must be str, not {type(uri).__name__}")
    return uris


def _option_text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Real) and not isinstance(value, bool):
        return repr(value)
    raise TypeError(f"option {name} must be str, int or float, not {type(value).__name__}")


def _new_ctx(nodes: Any, options: Dict[str, Any]) -> Any:
    """A C client for the nodes with the options set, or raises."""
    ctx = capi.redlock_ctx_new(_check_nodes(nodes))
    try:
        for name, value in options.items():
            capi.redlock_ctx_set_option(ctx, name, _option_text(name, value))
        _log_events(ctx)
    except BaseException:
        capi.redlock_ctx_free(ctx)
        raise
    return ctx


def _names(*names: Any) -> Tuple[str, ...]:
    """The resources of get_lock() or get_multi_lock(), checked."""
    if not names:
        raise TypeError("get_multi_lock() needs at least one name")
    return tuple(_check_name(name) for name in names)


class Redlock:
    """A client for N independent Redis masters.

    ``nodes`` is a list of URIs, ``redis://[[user]:password@]host[:port][/db]``
    or ``unix://[[user]:password@]/path.sock[?db=N]``; ``options`` are the C
    library's, by name (the README's options table; ``get_option`` reads one
    back). Nothing connects until the first lock call.

    A client may be shared by threads. ``close()`` (or leaving a ``with``
    block) releases, best effort, every lock still held through the client and
    closes its connections; it must not run while other threads use the
    client. A client that is collected is closed the same way.
    """

    def __init__(self, nodes: Sequence[str], **options: OptionValue) -> None:
        self._ctx = ctx = _new_ctx(nodes, options)
        self._kept_lease_ms = int(capi.redlock_ctx_get_option(ctx, "watchdog_lease_ms"))
        # Every _Held made through this client and not yet freed.
        self._live: Set[_Held] = set()
        # The state get_rlock() objects of one name share, while any is alive.
        self._rlocks: weakref.WeakValueDictionary[str, _Reentrant] = weakref.WeakValueDictionary()
        self._rlocks_mutex = threading.Lock()
        self._finalizer = weakref.finalize(self, capi.redlock_ctx_free, ctx)

    def get_lock(self, name: str) -> Lock:
        """A lock on one resource (not acquired yet)."""
        self._context()
        return Lock(self, _names(name))

    def get_multi_lock(self, *names: str) -> Lock:
        """A lock on several resources, acquired all together or not at all."""
        self._context()
        return Lock(self, _names(*names))

    def get_rlock(self, name: str) -> RLock:
        """A reentrant lock on one resource, like threading.RLock: the
        thread holding it may acquire it again (through this object or any
        other get_rlock() of the same name from this client), and holds it
        until it has released it as many times."""
        self._context()
        _check_name(name)
        with self._rlocks_mutex:
            shared = self._rlocks.get(name)
            if shared is None:
                shared = self._rlocks[name] = _Reentrant(Lock(self, (name,)))
        return RLock(shared)

    @contextmanager
    def lock(self, name: str, lease: Optional[float] = None,
             wait: float = 0.0) -> Iterator[Lock]:
        """``with client.lock(name, lease=..., wait=...) as lock:`` runs the
        block under the lock and releases it after; without a lease the lock
        is kept (renewed) until then.

        Raises LockNotAcquired when someone else still holds it after
        ``wait`` seconds, NoQuorum when too few nodes answered. On leaving the
        block, LockNotHeld if the lock had been lost meanwhile (unless the
        block raised: its exception goes on)."""
        lock = self.get_lock(name)
        lock._acquire(_millis(wait, "wait"), *lock._lease(lease))
        try:
            yield lock
        except BaseException as exc:
            lock.__exit__(type(exc), exc, exc.__traceback__)
            raise
        lock.__exit__(None, None, None)

    def get_option(self, name: str) -> str:
        """The current value of a library option, as text (as set)."""
        return capi.redlock_ctx_get_option(self._context(), name)

    def health(self) -> List[Dict[str, Any]]:
        """What the client knows of each node, in the order of ``nodes``:
        one dict per node with ``node`` ("host:port"), ``state`` ("unknown",
        "up", "slow", "down", "guarded", "auth_refused" or
        "permission_denied"), ``last_error``
        (None when none), ``rtt_ms`` (a recent round trip, None before any),
        the counters ``commands``, ``failures`` and ``timeouts`` since the
        client was made, ``for_ms`` (time in that state), ``retry_in_ms``,
        ``guard_ms``, ``run_id`` and ``version``. No I/O: it is what the
        calls so far have seen (ping() refreshes it)."""
        return _health(self._context())

    def ping(self) -> int:
        """Sends PING to every node at once and waits for each (up to its
        deadline): the number of nodes that answered and count towards a
        quorum. Raises NoQuorum (or AuthError) when fewer than a quorum do;
        health() then says which nodes failed and why."""
        return capi.redlock_ctx_ping(self._context())

    def close(self) -> None:
        """Releases the locks still held (best effort) and closes the
        connections. Calling it again does nothing."""
        for held in list(self._live):
            held.discard()
        self._finalizer()

    def __enter__(self) -> Redlock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _context(self) -> Any:
        if not self._finalizer.alive:
            raise ValueError("the Redlock client is closed")
        return self._ctx


class _Held:
    """One C handle of an acquired lock, freed exactly once: by release(), by
    discard(), or, when the Lock owning it is collected, by its finalizer
    (which releases the lock first, best effort)."""

    def __init__(self, owner: Lock, client: Redlock, handle: Any) -> None:
        self.client = client
        self.handle = handle
        self._owner = weakref.ref(owner)
        self._id = 0  # in _kept while kept
        self._lost_error: Optional[LockError] = None
        self._was_lost = False
        self._finalizer = weakref.finalize(owner, self._free, True)
        client._live.add(self)

    def keep(self) -> None:
        """Has the client's thread renew the lock until it is released."""
        self._id = next(_kept_ids)
        _kept[self._id] = self
        capi.redlock_py_watch(self.handle, self._id)

    def lose(self, error: LockError) -> None:
        """The C library's report that this kept lock was lost."""
        self._lost_error = error
        owner = self._owner()
        if owner is not None and owner._held is self:
            owner._tell_lost(error)

    def lost(self) -> bool:
        handle = self.handle
        if handle is None:
            return self._was_lost
        return self._lost_error is not None or capi.redlock_handle_lost(handle) == 1

    def lost_error(self) -> LockError:
        return self._lost_error or LockNotHeld(capi.REDLOCK_ENOTHELD, "the kept lock was lost")

    def release(self) -> None:
        """Unlocks on the nodes and frees the handle. LockNotHeld when the
        lock had expired or been lost, or the handle was already freed."""
        if self._finalizer.detach() is None:
            raise LockNotHeld(capi.REDLOCK_ENOTHELD, "the lock was released when its client closed")
        self._free(False)

    def discard(self) -> None:
        """Unlocks on the nodes, ignoring failures, and frees the handle."""
        self._finalizer()

    def extend(self, lease_ms: int) -> None:
        if self.handle is None:
            raise LockNotHeld(capi.REDLOCK_ENOTHELD, "the lock was released when its client closed")
        capi.redlock_extend(self.handle, lease_ms)

    def validity_ms(self) -> int:
        return 0 if self.handle is None else capi.redlock_handle_validity_ms(self.handle)

    def token(self) -> Optional[str]:
        return None if self.handle is None else capi.redlock_handle_token(self.handle)

    def fences(self, names: Tuple[str, ...]) -> Dict[str, int]:
        return _fences(self.handle, names)

    def _free(self, quiet: bool) -> None:
        handle = self.handle
        self.client._live.discard(self)
        try:
            capi.redlock_unlock(handle)
        except LockError:
            if not quiet:
                raise
        finally:
            # Once unlocked, the C library reports no loss any more.
            self._was_lost = capi.redlock_handle_lost(handle) == 1
            self.handle = None
            capi.redlock_handle_free(handle)
            _kept.pop(self._id, None)


class Lock:
    """A distributed lock on one or more resources, from Redlock.get_lock()
    or Redlock.get_multi_lock().

    Times are seconds (float). The lease is how long the lock stays held
    unless extended or released; ``validity`` is what remains of it.

    Without a lease (the default of try_lock(), acquire(), ``with lock:`` and
    ``client.lock()``) the lock is kept: it is taken for the client's
    ``watchdog_lease_ms`` and the client's own thread renews it every third
    of that until it is released. Should renewal fail for good (too few
    nodes answer) the lock is lost no later than its validity reaching 0:
    ``lost`` turns True and the callbacks given to on_lost() run. With a
    lease, nothing renews the lock: it expires when the lease runs out.

    The object holds at most one acquisition, and works like
    ``threading.Lock``: ``acquire``/``release``/``locked``, ``with lock:``.
    It is not reentrant: acquiring a lock this object already holds waits
    until the lease runs out. Threads may share it, like a threading.Lock.

    A Lock that is collected while held is released on the nodes, best effort
    (a weakref finalizer runs the release); release explicitly rather than
    rely on it.
    """

    def __init__(self, client: Redlock, names: Tuple[str, ...]) -> None:
        self._client = client
        self._names = names
        self._mutex = threading.Lock()  # guards _held; never held while waiting for a lock
        self._held: Optional[_Held] = None
        self._last: Optional[_Held] = None  # the latest acquisition, even once released
        self._on_lost: List[Callable[[Lock, LockError], Any]] = []

    @property
    def names(self) -> Tuple[str, ...]:
        """The resources this lock covers."""
        return self._names

    def try_lock(self, wait: float = 0.0, lease: Optional[float] = None) -> bool:
        """Tries to acquire the lock for ``lease`` seconds (None: kept until
        released), retrying for up to ``wait`` seconds (0: one attempt).

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
        wait_ms: Optional[int]
        if not blocking:
            if timeout != -1:
                raise ValueError("can't specify a timeout for a non-blocking call")
            wait_ms = 0
        elif timeout == -1:
            wait_ms = None
        else:
            wait_ms = _millis(timeout, "timeout")
        try:
            self._acquire(wait_ms, *self._lease(None))
        except LockNotAcquired:
            return False
        return True

    def unlock(self) -> None:
        """Releases the lock on the nodes. Raises LockNotHeld when it was not
        held, or had expired or been lost (the critical section may not have
        been exclusive); it is not held afterwards either way."""
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
    def fence(self) -> Optional[int]:
        """The fencing token of the current acquisition (client option
        ``fencing=1``): larger for every later holder of the resource. Send it
        with each write to the storage the lock protects, and have the storage
        refuse one older than the newest it has seen. For a multi-lock, the
        first resource's (``fences`` has them all). None when not held or
        taken without fencing."""
        return self.fences.get(self._names[0])

    @property
    def fences(self) -> Dict[str, int]:
        """The fence of each resource of the current acquisition, by name;
        empty when not held or taken without fencing."""
        with self._mutex:
            return {} if self._held is None else self._held.fences(self._names)

    @property
    def lost(self) -> bool:
        """Whether the latest acquisition, a kept one, was lost: True from
        the moment renewal failed for good or validity ran out, until the
        lock is acquired again. False for a lock with a lease, which simply
        expires (``validity`` tells)."""
        last = self._last
        return last is not None and last.lost()

    def on_lost(self, callback: Callable[[Lock, LockError], Any]) -> None:
        """Calls ``callback(lock, error)`` when a kept acquisition of this
        lock is lost (error: LockNotHeld when a quorum says the lock is no
        longer ours, LockExpired when the nodes failed until its validity ran
        out), for this and every later acquisition.

        The callback runs on the client's thread, which renews every kept lock
        of the client: it must return quickly and not call into the client
        (hand the news to your own thread or event loop). If the current
        acquisition is lost already, the callback runs at once, here."""
        if not callable(callback):
            raise TypeError(f"on_lost() needs a callable, not {type(callback).__name__}")
        self._on_lost.append(callback)
        held = self._held
        if held is not None and held.lost():
            callback(self, held.lost_error())

    def is_held(self) -> bool:
        """Whether this object holds the lock with validity left: False once
        the lease has run out, even before any release."""
        return self.validity > 0

    def locked(self) -> bool:
        """Whether the lock is held, by anyone: asks the nodes (a quorum of
        them has it under one token), as redis-py's Lock.locked() does. A
        multi-lock is locked when any of its resources is. Raises NoQuorum
        when too few nodes answer to tell. is_held() is this object's own
        hold."""
        ctx = self._client._context()
        return any(capi.redlock_inspect(ctx, name)[0] for name in self._names)

    def remain_time_to_live(self) -> Optional[float]:
        """Seconds for which a quorum of the nodes still has the lock,
        whoever holds it (Redisson's remainTimeToLive); None when nobody
        holds it, math.inf when its key has no expiry. For a multi-lock, the
        longest of its resources'. Raises NoQuorum when too few nodes answer
        to tell."""
        ctx = self._client._context()
        return _time_to_live(capi.redlock_inspect(ctx, name) for name in self._names)

    def force_unlock(self) -> bool:
        """Deletes the lock on every node whatever its token, and wakes the
        clients waiting for it: for an operator whose lock holder is known
        to be gone. Dangerous: a holder still alive goes on as if it held
        the lock while another takes it. True when a lock was deleted on
        some node. Raises NoQuorum when too few nodes answered to be sure it
        is gone."""
        ctx = self._client._context()
        return sum(capi.redlock_force_unlock(ctx, name) for name in self._names) > 0

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

    def __repr__(self) -> str:
        state = "held" if self.is_held() else "not held"
        return f"<redlock.Lock {', '.join(map(repr, self._names))} {state}>"

    def _discard(self) -> None:
        with self._mutex:
            held, self._held = self._held, None
        if held is not None:
            held.discard()

    def _lease(self, lease: Optional[float]) -> Tuple[int, bool]:
        return _lease_or_kept(lease, self._client._kept_lease_ms)

    def _acquire(self, wait_ms: Optional[int], lease_ms: int, keep: bool) -> None:
        """Acquires, with the C library retrying for wait_ms (None: until it
        succeeds), or raises the error of the last attempt; keeps the lock
        when asked. Signal handlers run during the wait: Ctrl-C raises
        KeyboardInterrupt, and the attempt under way is released."""
        ctx = self._client._context()
        wait = _FOREVER_MS if wait_ms is None else wait_ms
        self._hold(self._lock_call(ctx, lease_ms, wait), keep)

    def _hold(self, handle: Any, keep: bool) -> None:
        held = _Held(self, self._client, handle)
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
        callbacks = list(self._on_lost)
        failure: Optional[BaseException] = None
        for callback in callbacks:
            try:
                callback(self, error)
            except BaseException as exc:  # noqa: B902 - reported once all ran
                failure = failure or exc
        if failure is not None:
            raise failure

    def _lock_call(self, ctx: Any, lease_ms: int, wait_ms: int) -> Any:
        if len(self._names) == 1:
            return capi.redlock_lock(ctx, self._names[0], lease_ms, wait_ms)
        return capi.redlock_lock_multi(ctx, self._names, lease_ms, wait_ms)


class _Reentrant:
    """What the RLock objects of one name share: the lock, its owner thread
    and how many times that thread acquired it."""

    def __init__(self, lock: Lock) -> None:
        self.lock = lock
        self.mutex = threading.Lock()  # guards owner and count; never held while waiting
        self.owner: Optional[int] = None
        self.count = 0


class RLock:
    """A reentrant distributed lock, from Redlock.get_rlock(): the surface
    of threading.RLock (``acquire(blocking, timeout)``, ``release()``,
    ``with``), plus try_lock(wait, lease). The first acquisition by a thread
    takes the lock on the nodes (kept until released when no lease is
    given); later ones by the same thread only count, and the last release
    unlocks it on the nodes."""

    def __init__(self, shared: _Reentrant) -> None:
        self._shared = shared

    @property
    def lock(self) -> Lock:
        """The underlying Lock (lost, on_lost, validity, token)."""
        return self._shared.lock

    def try_lock(self, wait: float = 0.0, lease: Optional[float] = None) -> bool:
        """As Lock.try_lock; True at once when this thread holds it already
        (its lease stays what the first acquisition made it)."""
        if self._reenter():
            return True
        return self._first(self._shared.lock.try_lock(wait, lease))

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """threading.RLock.acquire, for the lock on the nodes."""
        if self._reenter():
            return True
        return self._first(self._shared.lock.acquire(blocking, timeout))

    def release(self) -> None:
        """Counts one release; the last one unlocks on the nodes (raising
        LockNotHeld, as Lock.unlock does, if the lock had been lost).
        RuntimeError when this thread does not hold it."""
        shared = self._shared
        with shared.mutex:
            if shared.owner != threading.get_ident():
                raise RuntimeError("cannot release un-acquired lock")
            shared.count -= 1
            if shared.count:
                return
            shared.owner = None
        shared.lock.unlock()

    unlock = release

    def get_hold_count(self) -> int:
        """How many times the calling thread holds it (0: not at all)."""
        shared = self._shared
        with shared.mutex:
            return shared.count if shared.owner == threading.get_ident() else 0

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
            if shared.owner == threading.get_ident():
                shared.count += 1
                return True
        return False

    def _first(self, acquired: bool) -> bool:
        if acquired:
            shared = self._shared
            with shared.mutex:
                shared.owner, shared.count = threading.get_ident(), 1
        return acquired
