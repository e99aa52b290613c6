<?php

declare(strict_types=1);

namespace Redlock;

/** The key exists and is not a lock (REDLOCK_EWRONGTYPE). */
class WrongTypeException extends RedlockException
{
}
