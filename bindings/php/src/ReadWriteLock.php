<?php

declare(strict_types=1);

namespace Redlock;

use Redlock\Internal\Gate;
use Redlock\Internal\ReadWriteHalf;

/**
 * A read-write lock, from Client::getReadWriteLock($name): its readLock()
 * is held by any number of readers at once, its writeLock() by one writer
 * with no reader (as Redisson's RReadWriteLock). Each is a Lock (tryLock,
 * lock, unlock, extend, isLost...), kept (renewed) when no lease is given.
 * The write lock and a plain lock of the same name exclude each other.
 *
 * The two locks of one ReadWriteLock belong together: holding its write
 * lock, its read lock may be taken too (a downgrade: unlock the write lock
 * after, and no other writer comes in between); holding its read lock, its
 * write lock is refused with InvalidArgumentException (no upgrade).
 */
final class ReadWriteLock
{
    private ReadWriteHalf $read;
    private ReadWriteHalf $write;

    /** @internal made by Client */
    public function __construct(Client $client, Gate $gate, private string $name)
    {
        $this->read = new ReadWriteHalf($client, $gate, $name, REDLOCK_READ, $this);
        $this->write = new ReadWriteHalf($client, $gate, $name, REDLOCK_WRITE, $this);
    }

    public function getName(): string
    {
        return $this->name;
    }

    /** The read lock (the same object on every call). */
    public function readLock(): Lock
    {
        return $this->read;
    }

    /** The write lock (the same object on every call). */
    public function writeLock(): Lock
    {
        return $this->write;
    }

    /** @internal the half that is not $mode's */
    public function other(int $mode): Lock
    {
        return $mode === REDLOCK_READ ? $this->write : $this->read;
    }
}
