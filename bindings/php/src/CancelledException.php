<?php

declare(strict_types=1);

namespace Redlock;

/** A wait was cancelled (REDLOCK_ECANCELED). */
class CancelledException extends RedlockException
{
}
