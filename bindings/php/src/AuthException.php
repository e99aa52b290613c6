<?php

declare(strict_types=1);

namespace Redlock;

/** A node refused the credentials (REDLOCK_EAUTH). */
class AuthException extends RedlockException
{
}
