<?php

declare(strict_types=1);

namespace Redlock;

/** An operating system call failed: the random source, poll (REDLOCK_ESYSTEM). */
class SystemCallException extends RedlockException
{
}
