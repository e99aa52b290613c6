<?php

declare(strict_types=1);

namespace Redlock;

/**
 * Base of every Redlock error. getCode() is the C library's status code (a
 * negative REDLOCK_E* value of redlock.h; 0 for ClientClosedException, whose
 * call never reached the library), getMessage() its detail of the failure
 * (which nodes, and why; never a password), or the code's description when
 * it gave none.
 */
class RedlockException extends \RuntimeException
{
    /** The one mapping from status codes to exceptions (the Python and Java bindings' own). */
    private const CLASSES = [
        REDLOCK_ELOCKED => LockHeldException::class,
        REDLOCK_ENOQUORUM => NoQuorumException::class,
        REDLOCK_ENOTHELD => LockNotHeldException::class,
        REDLOCK_EINVAL => InvalidArgumentException::class,
        REDLOCK_ENOMEM => OutOfMemoryException::class,
        REDLOCK_EEXPIRED => LeaseExpiredException::class,
        REDLOCK_EUNSUPPORTED => UnsupportedException::class,
        REDLOCK_EAUTH => AuthException::class,
        REDLOCK_EWRONGTYPE => WrongTypeException::class,
        REDLOCK_EREDIS => RedisErrorException::class,
        REDLOCK_ESYSTEM => SystemCallException::class,
        REDLOCK_ECANCELED => CancelledException::class,
        REDLOCK_ETLS => TlsException::class,
        REDLOCK_ENOPERM => PermissionDeniedException::class,
    ];

    /**
     * The exception for a negative status code and its detail; the extension
     * calls it for every failed C call. A code newer than this table is a
     * plain RedlockException.
     */
    public static function forCode(int $code, string $message = ''): self
    {
        $class = self::CLASSES[$code] ?? self::class;
        return new $class($message !== '' ? $message : redlock_strerror($code), $code);
    }
}
