<?php

declare(strict_types=1);

namespace Redlock;

/** Too few nodes answered to decide (REDLOCK_ENOQUORUM): an outage, not contention. */
class NoQuorumException extends RedlockException
{
}
