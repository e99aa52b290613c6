<?php

declare(strict_types=1);

namespace Redlock;

/** The library ran out of memory (REDLOCK_ENOMEM). */
class OutOfMemoryException extends RedlockException
{
}
