<?php

declare(strict_types=1);

namespace Redlock\Internal\Swoole;

/**
 * One engine operation driven to its end by the coroutine that called
 * Driver::drive(): the operation, the connections it was given, and what
 * wakes it (a reply that the engine says matters, a connect, a release of
 * its keys).
 *
 * @internal
 */
final class Run
{
    public Signal $signal;
    /** @var list<Conn> */
    public array $conns = [];
    /** The time it waits for (redlock_op_react's waiting_ms) while it waits; null otherwise. */
    public ?int $waiting = null;
    /** Its id among the waiters woken by releases (0: not registered). */
    public int $waitId = 0;
    /** A lock not yet registered with the waiters (nor refused). */
    public bool $mayWait = true;

    /** @var mixed the redlock_op while it runs */
    public mixed $op = null;

    public function __construct()
    {
        $this->signal = new Signal();
    }
}
