<?php

declare(strict_types=1);

namespace Redlock;

/**
 * The resource is held by someone else (REDLOCK_ELOCKED). tryLock() and tryAcquire() report it by
 * returning false or null; it reaches callers from synchronized() with a wait.
 */
class LockHeldException extends RedlockException
{
}
