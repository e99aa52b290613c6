"""redlock: distributed locks over N independent Redis masters (Redlock).

    import redlock

    with redlock.Redlock(["redis://10.0.0.1", "redis://10.0.0.2",
                          "redis://10.0.0.3"], key_prefix="app:") as client:
        lock = client.get_lock("report")
        if lock.try_lock(wait=2.0, lease=10.0):
            try:
                ...                       # lock.validity seconds left
            finally:
                lock.unlock()

        with client.lock("report", lease=10.0, wait=2.0):
            ...                           # raises LockNotAcquired if held elsewhere

Times are seconds (float). Errors are LockError subclasses carrying the C
status ``code`` and the library's detail as message. The raw C API is
redlock.capi; the classes here are the supported interface.
"""

from . import capi
from ._front import option_defaults, split_nodes
from .client import DEFAULT_LEASE, Lock, Permit, ReadWriteLock, Redlock, RLock, Semaphore
from .errors import (
    AuthError,
    Cancelled,
    ClientClosed,
    InvalidArgument,
    LockError,
    LockExpired,
    LockNotAcquired,
    LockNotHeld,
    NoQuorum,
    OutOfMemory,
    PermissionDenied,
    RedisError,
    SystemCallError,
    TLSError,
    Unsupported,
    WrongTypeError,
)

__version__: str = capi.redlock_version_string()

__all__ = [
    "DEFAULT_LEASE",
    "AuthError",
    "Cancelled",
    "ClientClosed",
    "InvalidArgument",
    "Lock",
    "LockError",
    "LockExpired",
    "LockNotAcquired",
    "LockNotHeld",
    "NoQuorum",
    "OutOfMemory",
    "Permit",
    "PermissionDenied",
    "RedisError",
    "ReadWriteLock",
    "Redlock",
    "RLock",
    "Semaphore",
    "SystemCallError",
    "TLSError",
    "Unsupported",
    "WrongTypeError",
    "option_defaults",
    "split_nodes",
]
