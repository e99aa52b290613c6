"""What the sync client (redlock.client) and the asyncio one (redlock.asyncio)
share: argument checks and conversions, options, names, the events and the
health of the nodes, and the parts of a lock that do no I/O (on_lost and its
callbacks, fences, repr, the reentry count and its owner). Each front adds
its own way of waiting for the nodes: a blocking call, or the loop.

The rules (docs/locks.md; abi/redlock.h says them for C):

- Reentry keeps the first terms: an RLock acquired again by its owner
  (thread, or task) counts a hold (redlock_handle_reenter) and changes
  neither the keys' TTL nor the renewal; acquiring again after the hold
  was lost starts afresh (a new acquisition; ``lost`` tells the loss until
  it succeeds).
- ``lost`` is true whenever the keys can have expired while held: a kept
  lock whose renewal failed, and a lock with a lease whose validity ran out
  before it was released (redlock_handle_lost).
- The default wait: ``lock()`` and ``with`` wait until acquired;
  ``try_lock()`` with no wait makes one attempt.
- A multi-lock is locked when any of its resources is, for the longest of
  their times to live (redlock_inspect_merge).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any, Callable, Dict, Generic, List, Optional, Tuple, TypeVar, Union

from . import capi
from .errors import InvalidArgument, LockError, LockNotHeld

def option_defaults() -> Dict[str, str]:
    """Every option of the library (docs/options.md) with its default, as
    the text an option takes, in the library's order: read from the
    library's table, as the clients' options are set."""
    return {name: capi.redlock_option_default(name)
            for name in map(capi.redlock_option_name, range(capi.redlock_option_count()))}


#: The default of the option ``watchdog_lease_ms``, in seconds: the lease of
#: a kept lock (one acquired without a lease), renewed every third of it.
DEFAULT_LEASE = int(capi.redlock_option_default("watchdog_lease_ms")) / 1000

# "As long as it takes": the C library saturates a wait this long.
_FOREVER_MS = 2**62

OptionValue = Union[str, int, float]


def _millis(seconds: Any, what: str, arg: int = capi.REDLOCK_ARG_WAIT) -> int:
    """A time in seconds as the whole milliseconds the calls take, checked
    by the library's rule for arg (a wait, or a lease): InvalidArgument (a
    ValueError) with the rule's message, the same in every language."""
    kind = type(seconds)
    # int and float skip the abstract-class check, which costs more than the rest.
    if kind is not int and kind is not float and (kind is bool or not isinstance(seconds, Real)):
        raise TypeError(f"{what} must be a number of seconds, not {type(seconds).__name__}")
    try:
        ms = float(seconds) * 1000
    except OverflowError:   # an int beyond any float
        ms = math.inf if seconds > 0 else -math.inf
    return capi.redlock_arg_check(arg, what, ms)


def _lease_ms(lease: Any) -> int:
    return _millis(lease, "lease", capi.REDLOCK_ARG_LEASE)


def _wait_ms(wait: Optional[float]) -> Optional[int]:
    """A wait argument in milliseconds; None (the default of lock() and of
    the context managers): until acquired."""
    return None if wait is None else _millis(wait, "wait")


def _acquire_wait_ms(blocking: bool, timeout: float) -> Optional[int]:
    """The wait of acquire(blocking, timeout), as threading.Lock.acquire
    takes them: None (until acquired) for timeout -1, 0 for blocking=False."""
    if not blocking:
        if timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        return 0
    if timeout == -1:
        return None
    return _millis(timeout, "timeout")


def _lease_or_kept(lease: Optional[float], kept_ms: int) -> Tuple[int, bool]:
    """The lease in milliseconds, and whether the lock is to be kept (no
    lease given: the client's watchdog_lease_ms, renewed)."""
    if lease is None:
        return kept_ms, True
    return _lease_ms(lease), False


def _time_to_live(ttl_ms: int) -> Optional[float]:
    """A lock's time to live in seconds from the C library's answer
    (redlock_inspect_multi, or redlock_inspect_merge over redlock_inspect's):
    None when not locked (-2), math.inf without expiry (-1)."""
    if ttl_ms == -2:
        return None
    return math.inf if ttl_ms < 0 else ttl_ms / 1000


def _fences(handle: Any, names: Tuple[str, ...]) -> Dict[str, int]:
    """The fence of each resource of a held lock; {} when it was taken
    without fencing (the C library says 0)."""
    if handle is None:
        return {}
    fences = {name: capi.redlock_handle_fence(handle, i) for i, name in enumerate(names)}
    return fences if all(fences.values()) else {}


#: The library's events go to this logger (docs/logging.md).
#: It has a NullHandler and nothing else, as libraries do: the application
#: decides where records go, and one that configures no logging gets none of
#: them on stderr from logging's last-resort handler.
_logger = logging.getLogger("redlock")
_logger.addHandler(logging.NullHandler())


#: Control bytes (below 0x20, and 0x7f) as the C library escapes them in
#: its events: \n, \r, \t, else \xNN.
_CONTROLS = {c: (f"\\x{c:02x}" if c not in (9, 10, 13) else {9: "\\t", 10: "\\n", 13: "\\r"}[c])
             for c in [*range(0x20), 0x7F]}


def _escape(text: str) -> str:
    """text with its control bytes escaped: one line of a log, always."""
    return text.translate(_CONTROLS)


def _log(level: int, event: str, message: str) -> None:
    """Called by redlock.capi with each event of a client, on whichever
    thread emitted it: hands it to the "redlock" logger. The record's message
    is "event message"; ``record.redlock_event`` is the event's name. The C
    library escapes control bytes already; what reaches the logger is
    escaped here too, so that no record spans two lines."""
    event, message = _escape(event), _escape(message)
    _logger.log(level, "%s %s", event, message, extra={"redlock_event": event})


def _log_events(ctx: Any) -> None:
    """Sends the client's events to the "redlock" logger, from the level
    it is enabled for now; with that level above ERROR nothing is sent (and
    nothing is formatted)."""
    level = _logger.getEffectiveLevel()
    if level <= logging.ERROR:
        capi.redlock_py_set_log(ctx, level)


#: The fields of a node's health, in their order, and how each type of the
#: library's (redlock_health_type) becomes Python's.
_HEALTH_FIELDS = tuple(itertools.takewhile(lambda field: field is not None,
                                           map(capi.redlock_health_field, itertools.count())))
_HEALTH_TYPES = {capi.REDLOCK_TYPE_TEXT: str, capi.REDLOCK_TYPE_INT: int,
                 capi.REDLOCK_TYPE_REAL: float}


def _health_value(text: str, node: int, field: str) -> Any:
    """One field of a node's health, as the library types it: None where
    the node has no value."""
    kind = capi.redlock_health_type(text, node, field)
    if kind == capi.REDLOCK_TYPE_NONE:
        return None
    return _HEALTH_TYPES[kind](capi.redlock_health_value(text, node, field))


def _health(ctx: Any) -> List[Dict[str, Any]]:
    """redlock_ctx_health's lines, one dict per node (docs/logging.md), read
    field by field through the library, which decodes and types them."""
    text = capi.redlock_swig_health(ctx)
    if text is None:
        raise MemoryError("redlock_ctx_health")
    return [{field: _health_value(text, node, field) for field in _HEALTH_FIELDS}
            for node in range(capi.redlock_health_nodes(text))]


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a lock name must be str, not {type(name).__name__}")
    return name


def _check_permits(permits: Any) -> int:
    """A semaphore's number of permits: an int (not a bool), checked by the
    library's rule (from 1 to REDLOCK_MAX_PERMITS)."""
    if isinstance(permits, bool) or not isinstance(permits, Integral):
        raise InvalidArgument(capi.REDLOCK_EINVAL,
                              f"permits must be an int, not {type(permits).__name__}")
    # An int too large for a float is refused as 2**53 is.
    number = float(max(min(permits, 2**53), -2**53))
    return capi.redlock_arg_check(capi.REDLOCK_ARG_PERMITS, "permits", number)


def split_nodes(text: str) -> List[str]:
    """The node URIs of one string (an environment variable such as
    REDLOCK_NODES, a setting): a comma followed by ``scheme://`` starts the
    next URI, so the commas between a Sentinel URI's sentinels stay in it.
    The library splits it and refuses an empty URI (InvalidArgument)."""
    if not isinstance(text, str):
        raise TypeError(f"nodes must be a str, not {type(text).__name__}")
    return [capi.redlock_uri_list_item(text, i) for i in range(capi.redlock_uri_list_count(text))]


def _check_nodes(nodes: Any) -> List[str]:
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Iterable):
        raise TypeError(f"nodes must be a list of URI strings, not {type(nodes).__name__}")
    uris = list(nodes)
    for uri in uris:
        if not isinstance(uri, str):
            raise TypeError(f"a node URI must be str, not {type(uri).__name__}")
    return uris


def _option_text(name: str, value: Any) -> str:
    """An option's value as the text the library takes; a bool where the
    library's table says the option is one (0 or 1)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) and capi.redlock_option_type(name) == capi.REDLOCK_TYPE_BOOL:
        return "1" if value else "0"
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
    checked = tuple(_check_name(name) for name in names)
    first = {}
    for i, name in enumerate(checked, 1):
        if name in first:
            # One key counted twice: refused where the mistake is made.
            raise InvalidArgument(capi.REDLOCK_EINVAL,
                                  f"name {i}: {name!r} is listed twice (as name {first[name]})")
        first[name] = i
    return checked


class _ClientFront:
    """The part of a client that does no I/O: its C client and options."""

    _ctx: Any
    _kept_lease_ms: int

    def _setup(self, nodes: Any, options: Dict[str, Any]) -> Any:
        self._ctx = ctx = _new_ctx(nodes, options)
        self._kept_lease_ms = int(capi.redlock_ctx_get_option(ctx, "watchdog_lease_ms"))
        return ctx

    def _context(self) -> Any:
        """The C client, or ValueError once the client is closed."""
        raise NotImplementedError

    def _with_ctx(self, call: Callable[..., Any], *args: Any) -> Any:
        """call(ctx, *args) on the C client; ClientClosed once the client is
        closed. A client shared by threads makes it wait for close (Redlock)."""
        return call(self._context(), *args)

    def get_option(self, name: str) -> str:
        """The current value of a library option, as text (as set)."""
        return self._with_ctx(capi.redlock_ctx_get_option, name)

    def health(self) -> List[Dict[str, Any]]:
        """What the client knows of each node, in the order of ``nodes``:
        one dict per node with ``node`` ("host:port"), ``state`` ("unknown",
        "up", "slow", "down", "guarded", "auth_refused" or
        "permission_denied"), ``last_error``
        (None when none), ``rtt_ms`` (a recent round trip, None before any),
        the counters ``commands``, ``failures`` and ``timeouts`` since the
        client was made, ``for_ms`` (time in that state), ``retry_in_ms``,
        ``guard_ms``, ``run_id``, ``version``, ``kind`` ("master", or
        "sentinel" for a Sentinel group) and ``server`` (where a new
        connection goes: a Sentinel group's master as its sentinels last
        named it, None before), and the other fields of the line
        (docs/logging.md), such as ``conns`` (an int), ``scripts`` and
        ``native`` (the commands a node takes in place of a plain lock's
        scripts: "ifeq,delifeq" on Valkey 9, "none", "unknown"). The
        library types each field, and says where a node has none (None),
        as for every language. No I/O: it is what the calls so far have
        seen (ping() refreshes it)."""
        return self._with_ctx(_health)


L = TypeVar("L", bound="_LockFront")


class _LockFront:
    """The part of a lock that does no I/O: its names, lease, fences, the
    on_lost callbacks and repr. A front's Lock gives _current_handle() (the current
    acquisition's C handle, or None) and _lost_now() (its current loss, if
    any, for a callback registered late)."""

    _LABEL = "redlock.Lock"
    #: What the repr says of the lock's kind after its names: " (fair)" for
    #: a fair lock (get_fair_lock), nothing for a plain one.
    _KIND = ""

    def __init__(self, client: Any, names: Tuple[str, ...]) -> None:
        self._client = client
        self._names = names
        self._on_lost: List[Callable[[Any, LockError], Any]] = []

    @property
    def names(self) -> Tuple[str, ...]:
        """The resources this lock covers."""
        return self._names

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
        return _fences(self._current_handle(), self._names)

    def is_held(self) -> bool:
        """Whether this object holds the lock with validity left: False once
        the lease has run out, even before any release."""
        return self.validity > 0

    @property
    def validity(self) -> float:
        raise NotImplementedError

    def on_lost(self, callback: Callable[[Any, LockError], Any]) -> None:
        """Calls ``callback(lock, error)`` when a kept acquisition of this
        lock is lost (error: LockNotHeld when a quorum says the lock is no
        longer ours, LockExpired when the nodes failed until its validity ran
        out), for this and every later acquisition; at once, here, when the
        current acquisition is lost already. A lock with a lease has no
        renewal to fail: ``lost`` tells when its lease ran out."""
        if not callable(callback):
            raise TypeError(f"on_lost() needs a callable, not {type(callback).__name__}")
        self._on_lost.append(callback)
        error = self._lost_now()
        if error is not None:
            callback(self, error)

    def _current_handle(self) -> Any:
        raise NotImplementedError

    def _on_handle(self, call: Callable[..., Any], *args: Any, default: Any = None) -> Any:
        """call(handle, *args) on the current acquisition's C handle, which
        no free meets meanwhile; default when there is none."""
        handle = self._current_handle()
        return default if handle is None else call(handle, *args)

    def _lost_now(self) -> Optional[LockError]:
        raise NotImplementedError

    def _lease(self, lease: Optional[float]) -> Tuple[int, bool]:
        return _lease_or_kept(lease, self._client._kept_lease_ms)

    def _run_callbacks(self, error: LockError) -> List[BaseException]:
        """Runs every on_lost callback; what they raised, for the front to
        report its way once all ran."""
        failures: List[BaseException] = []
        for callback in list(self._on_lost):
            try:
                callback(self, error)
            except BaseException as exc:  # noqa: B902 - reported once all ran
                failures.append(exc)
        return failures

    def __repr__(self) -> str:
        state = "held" if self.is_held() else "not held"
        return f"<{self._LABEL} {', '.join(map(repr, self._names))}{self._KIND} {state}>"


class _ReadWriteFront(Generic[L]):
    """What the read-write locks of redlock and redlock.asyncio share: the
    pair of locks, the read lock and the write lock of one name."""

    def __init__(self, read: L, write: L) -> None:
        self._read = read
        self._write = write

    @property
    def name(self) -> str:
        return self._read.names[0]

    def read_lock(self) -> L:
        """The read lock (the same object on every call)."""
        return self._read

    def write_lock(self) -> L:
        """The write lock (the same object on every call)."""
        return self._write

    def _other(self, mode: int) -> L:
        """The half of the pair that is not mode's."""
        return self._write if mode == capi.REDLOCK_READ else self._read

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.ReadWriteLock {self.name!r}>"


def _half_repr(lock: _LockFront, mode: int) -> str:
    kind = "read" if mode == capi.REDLOCK_READ else "write"
    return f"<{type(lock).__module__}.ReadWriteLock {lock.names[0]!r} {kind} lock>"


class _SemaphoreFront:
    """What the semaphores of redlock and redlock.asyncio share: the client,
    the name and the number of permits, checked when it is made."""

    _LABEL = "redlock.Semaphore"

    def __init__(self, client: Any, name: str, permits: int) -> None:
        self._client = client
        self._name = _check_name(name)
        self._permits = _check_permits(permits)

    @property
    def name(self) -> str:
        """The semaphore's name."""
        return self._name

    @property
    def permits(self) -> int:
        """How many permits it has: at most this many held at once."""
        return self._permits

    def __repr__(self) -> str:
        return f"<{self._LABEL} {self._name!r} permits={self._permits}>"


def _not_for_permits(name: str, instead: str) -> Callable[..., Any]:
    """A Lock method that a Permit has no use for: it raises TypeError,
    saying what to use instead."""
    def refused(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"a Permit has no {name}(): {instead}")
    refused.__name__ = refused.__qualname__ = name
    return refused


class _PermitFront(_LockFront):
    """What the permits of redlock and redlock.asyncio share. Each front's
    Permit is its Lock (taken with redlock_acquire_permit) with this class
    first among its bases: the semaphore, the id, ``held``, repr, and the
    Lock methods a permit refuses. A permit is taken through its Semaphore,
    once; the nodes are asked about the semaphore (available_permits), not
    about one permit."""

    _LABEL = "redlock.Permit"

    def __init__(self, semaphore: _SemaphoreFront) -> None:
        super().__init__(semaphore._client, (semaphore.name,))
        self._semaphore = semaphore
        self._id: Optional[str] = None  # set when acquired

    @property
    def semaphore(self) -> Any:
        """The Semaphore this permit is of."""
        return self._semaphore

    @property
    def id(self) -> Optional[str]:
        """The permit's id: the token of its handle, 32 hex characters
        (kept once released)."""
        return self._id

    @property
    def held(self) -> bool:
        """Whether this permit is held with validity left (is_held())."""
        return self.is_held()

    try_lock = _not_for_permits("try_lock", "take a permit with Semaphore.try_acquire()")
    acquire = _not_for_permits("acquire", "take a permit with Semaphore.acquire()")
    locked = _not_for_permits("locked", "ask Semaphore.available_permits()")
    remain_time_to_live = _not_for_permits("remain_time_to_live", "see its validity")
    force_unlock = _not_for_permits("force_unlock", "release it")

    def __repr__(self) -> str:
        state = "held" if self.is_held() else "not held"
        which = f"{self._id[:8]}..." if self._id else "not taken"
        semaphore = self._semaphore
        return (f"<{self._LABEL} {which} of {semaphore.name!r} (permits={semaphore.permits}) "
                f"{state}>")


def _reenter(handle: Any) -> bool:
    """Counts one more hold of handle (LockNotHeld when it is lost)."""
    capi.redlock_handle_reenter(handle)
    return True


class _Reentrant(Generic[L]):
    """What the RLock objects of one name share: the lock, the owner (a
    thread's ident, or a task) and the reentry rule. The count of holds is
    the C library's (redlock_handle_reenter, _leave, _holds): reentry keeps
    the first terms, it never touches the keys' TTL nor the renewal. The
    caller serializes the calls (a mutex in the sync front; the loop in
    asyncio's)."""

    def __init__(self, lock: L) -> None:
        self.lock = lock
        self.owner: Optional[object] = None

    def reenter(self, owner: object) -> bool:
        """True when owner holds the lock and one more hold was counted;
        False when it must be acquired: owner does not hold it, or owner's
        hold was lost (its lease ran out, its renewal failed). A new
        acquisition after a loss starts afresh (docs/locks.md): the lost
        hold stays, lost, until the new one replaces it."""
        if self.owner is None or self.owner != owner:
            return False
        try:
            return bool(self.lock._on_handle(_reenter, default=False))
        except LockNotHeld:
            return False

    def first(self, owner: object) -> None:
        """owner has just acquired the lock."""
        self.owner = owner

    def leave(self, owner: object) -> bool:
        """Counts one release by owner; True when it was the last hold (the
        caller then unlocks on the nodes). RuntimeError when owner does not
        hold it."""
        if self.owner is None or self.owner != owner:
            raise RuntimeError("cannot release un-acquired lock")
        left = self.lock._on_handle(capi.redlock_handle_leave, default=0)
        if left:
            return False
        self.owner = None
        return True

    def holds(self, owner: object) -> int:
        """How many times owner holds it (0: not at all)."""
        if self.owner is None or self.owner != owner:
            return 0
        return self.lock._on_handle(capi.redlock_handle_holds, default=0)
