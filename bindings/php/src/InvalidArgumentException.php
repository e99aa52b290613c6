<?php

declare(strict_types=1);

namespace Redlock;

/**
 * The library refused an argument (REDLOCK_EINVAL): a node URI, an option, a lease, a number of
 * permits... with the library's message.
 */
class InvalidArgumentException extends RedlockException
{
}
