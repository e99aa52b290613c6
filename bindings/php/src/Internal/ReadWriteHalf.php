<?php

declare(strict_types=1);

namespace Redlock\Internal;

use Redlock\Client;
use Redlock\Lock;
use Redlock\ReadWriteLock;

/**
 * The read or the write lock of a ReadWriteLock: a Lock taken with
 * redlock_lock_rw, given the other half's handle when it is held (a
 * downgrade, or an upgrade that the library refuses).
 *
 * @internal
 */
final class ReadWriteHalf extends Lock
{
    /** @var \WeakReference<ReadWriteLock> */
    private \WeakReference $pair;

    public function __construct(Client $client, Gate $gate, string $name, private int $mode, ReadWriteLock $pair)
    {
        parent::__construct($client, $gate, [$name]);
        $this->pair = \WeakReference::create($pair);
    }

    protected function lockOp(mixed $ctx, int $leaseMs, int $waitMs, int $now): mixed
    {
        $held = $this->pair->get()?->other($this->mode)->currentHandle();
        return redlock_op_lock_rw($ctx, $this->names[0], $this->mode, $held, $leaseMs, $waitMs, $now);
    }

    protected function lockCall(mixed $ctx, int $leaseMs, int $waitMs): mixed
    {
        $held = $this->pair->get()?->other($this->mode)->currentHandle();
        return redlock_lock_rw($ctx, $this->names[0], $this->mode, $held, $leaseMs, $waitMs);
    }
}
