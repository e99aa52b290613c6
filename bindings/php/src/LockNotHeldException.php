<?php

declare(strict_types=1);

namespace Redlock;

/** The lock is not held: it expired, was lost or was already released (REDLOCK_ENOTHELD). */
class LockNotHeldException extends RedlockException
{
}
