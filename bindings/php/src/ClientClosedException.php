<?php

declare(strict_types=1);

namespace Redlock;

/**
 * A call on a client that is closed, or on a lock or permit of it
 * (docs/locks.md, "A closed client"): thrown at once, whatever the call.
 * Its code is 0: the call never reached the library.
 */
class ClientClosedException extends RedlockException
{
    public function __construct(string $what = '')
    {
        parent::__construct($what !== '' ? "$what: the Redlock client is closed"
            : 'the Redlock client is closed', 0);
    }
}
