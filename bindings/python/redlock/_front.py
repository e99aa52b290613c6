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

import logging
import math
from collections.abc import Iterable
from numbers import Integral, Real
from urllib.parse import unquote
from typing import Any, Callable, Dict, Generic, List, Optional, Tuple, TypeVar, Union

from . import capi
from .errors import InvalidArgument, LockError, LockNotHeld

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


_HEALTH_NUMBERS = ("for_ms", "retry_in_ms", "guard_ms", "commands", "failures", "timeouts")


def _health(ctx: Any) -> List[Dict[str, Any]]:
    """redlock_ctx_health's lines, one dict per node (docs/logging.md):
    node, state, last_error (None for none), rtt_ms (None before
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
        node["server"] = None if node.get("server", "-") == "-" else node["server"]
        nodes.append(node)
    return nodes


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a lock name must be str, not {type(name).__name__}")
    return name


def _check_permits(permits: Any) -> int:
    """A semaphore's number of permits, checked: an int from 1 to
    REDLOCK_MAX_PERMITS (not a bool)."""
    if isinstance(permits, bool) or not isinstance(permits, Integral) \
            or not 1 <= permits <= capi.REDLOCK_MAX_PERMITS:
        raise InvalidArgument(capi.REDLOCK_EINVAL, "a semaphore's permits must be an int from 1 "
                              f"to {capi.REDLOCK_MAX_PERMITS}, not {permits!r}")
    return int(permits)


def split_nodes(text: str) -> List[str]:
    """The node URIs of one string (an environment variable such as
    REDLOCK_NODES, a setting): a comma followed by ``scheme://`` starts the
    next URI, so the commas between a Sentinel URI's sentinels stay in it."""
    if not isinstance(text, str):
        raise TypeError(f"nodes must be a str, not {type(text).__name__}")
    rest = text.encode()
    uris = []
    while rest:
        n = capi.redlock_uri_list_next(rest.decode())   # bytes of the first URI
        uris.append(rest[:n].decode().strip())
        rest = rest[n + 1:]
    return uris


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
        named it, None before), and as strings the other fields of the
        line (docs/logging.md), such as ``scripts`` and ``native`` (the
        commands a node takes in place of a plain lock's scripts:
        "ifeq,delifeq" on Valkey 9, "none", "unknown"). No I/O: it is what
        the calls so far have seen (ping() refreshes it)."""
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
