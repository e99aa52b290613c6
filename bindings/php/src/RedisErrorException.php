<?php

declare(strict_types=1);

namespace Redlock;

/** Nodes answered with a Redis error: READONLY, OOM... (REDLOCK_EREDIS). */
class RedisErrorException extends RedlockException
{
}
