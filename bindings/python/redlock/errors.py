"""The exceptions of redlock, one per status code of the C library.

Every exception raised for a failed C call is a :class:`LockError` carrying
``code`` (the ``REDLOCK_E*`` status) and, as its message, the detail the
library gave for the failure (which nodes, and why; never a password).
Some also derive from the built-in exception a Python user would expect:
``InvalidArgument`` is a ``ValueError``, ``LockNotHeld`` a ``RuntimeError``
(what ``threading.Lock.release`` raises on an unlocked lock), ``OutOfMemory``
a ``MemoryError``, ``SystemCallError`` an ``OSError``.
"""

from typing import Dict, Type

from . import capi


class LockError(Exception):
    """Base of every redlock error. ``code`` is the C status code."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or capi.redlock_strerror(code))
        self.code = code


class LockNotAcquired(LockError):
    """The resource is held by someone else."""


class NoQuorum(LockError):
    """Too few nodes answered to decide."""


class LockNotHeld(LockError, RuntimeError):
    """The lock is not held: it expired, was lost or was already released."""


class InvalidArgument(LockError, ValueError):
    """The library refused an argument (a node URI, an option, a name...)."""


class OutOfMemory(LockError, MemoryError):
    """The library ran out of memory."""


class LockExpired(LockError):
    """The lease ran out: while acquiring, or before a kept lock's renewal succeeded."""


class Unsupported(LockError):
    """Not supported by this build or system (rediss:// where OpenSSL 3's
    libssl.so.3 is missing), or by the nodes: a multi, read-write or fair
    lock or a semaphore needs scripts, and too many nodes run none (the
    message names scripting and the nodes)."""


class AuthError(LockError):
    """A node refused the credentials."""


class PermissionDenied(LockError):
    """A node's ACL does not allow a command or key the library uses (its
    NOPERM reply): the message names each such node and what it refused,
    e.g. "no permissions to run the 'incr' command"."""


class WrongTypeError(LockError):
    """The key exists and is not a lock (a Redis value of another type)."""


class RedisError(LockError):
    """Nodes answered with a Redis error (READONLY, OOM...)."""


class SystemCallError(LockError, OSError):
    """An operating system call failed (the random source, poll)."""


class TLSError(LockError):
    """A TLS handshake or certificate check failed (rediss://): the message
    names each node and why, e.g. "certificate has expired"."""


class Cancelled(LockError):
    """A wait was cancelled (by a signal handler that raised: that exception
    is raised instead)."""


class ClientClosed(ValueError):
    """A call on a client that is closed, or on a lock or permit of it
    (docs/locks.md, "A closed client"): raised at once, whatever the call.
    A ValueError, as Python's own closed files raise."""

    def __init__(self, what: str = "") -> None:
        super().__init__(f"{what}: the Redlock client is closed" if what
                         else "the Redlock client is closed")


# The one mapping from status codes to exceptions.
ERRORS: Dict[int, Type[LockError]] = {
    capi.REDLOCK_ELOCKED: LockNotAcquired,
    capi.REDLOCK_ENOQUORUM: NoQuorum,
    capi.REDLOCK_ENOTHELD: LockNotHeld,
    capi.REDLOCK_EINVAL: InvalidArgument,
    capi.REDLOCK_ENOMEM: OutOfMemory,
    capi.REDLOCK_EEXPIRED: LockExpired,
    capi.REDLOCK_EUNSUPPORTED: Unsupported,
    capi.REDLOCK_EAUTH: AuthError,
    capi.REDLOCK_EWRONGTYPE: WrongTypeError,
    capi.REDLOCK_EREDIS: RedisError,
    capi.REDLOCK_ESYSTEM: SystemCallError,
    capi.REDLOCK_ECANCELED: Cancelled,
    capi.REDLOCK_ETLS: TLSError,
    capi.REDLOCK_ENOPERM: PermissionDenied,
}


def error_for(code: int, detail: str) -> LockError:
    """The exception for a negative status code. The raw module redlock.capi
    calls it for every failed C call; a code newer than this table is a plain
    LockError."""
    return ERRORS.get(code, LockError)(code, detail)
