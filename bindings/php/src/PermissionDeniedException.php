<?php

declare(strict_types=1);

namespace Redlock;

/**
 * A node's ACL does not allow a command or key the library uses (REDLOCK_ENOPERM, its NOPERM
 * reply): the message names each such node and what it refused.
 */
class PermissionDeniedException extends RedlockException
{
}
