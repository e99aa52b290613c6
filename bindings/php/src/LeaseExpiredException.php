<?php

declare(strict_types=1);

namespace Redlock;

/**
 * The lease ran out (REDLOCK_EEXPIRED): while acquiring, or before a kept lock's renewal
 * succeeded.
 */
class LeaseExpiredException extends RedlockException
{
}
