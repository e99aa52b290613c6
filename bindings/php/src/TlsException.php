<?php

declare(strict_types=1);

namespace Redlock;

/**
 * A TLS handshake or certificate check failed (REDLOCK_ETLS): the message names each node and why.
 */
class TlsException extends RedlockException
{
}
