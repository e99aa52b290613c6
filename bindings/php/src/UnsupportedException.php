<?php

declare(strict_types=1);

namespace Redlock;

/**
 * Not supported by this build or system (rediss:// without OpenSSL 3's libssl.so.3), or by the
 * nodes (REDLOCK_EUNSUPPORTED): a multi, read-write or fair lock or a semaphore needs scripts.
 */
class UnsupportedException extends RedlockException
{
}
