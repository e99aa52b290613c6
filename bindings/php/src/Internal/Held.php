<?php

declare(strict_types=1);

namespace Redlock\Internal;

use Redlock\Lock;
use Redlock\RedlockException;

/**
 * One acquisition: the C handle, and for a kept lock the record of its
 * loss (redlock_php_watch). The client lists every Held not yet freed, so
 * that close() releases them before it frees the C client; the Lock that
 * made it is referred to weakly, so that a Lock no one refers to any more
 * is destroyed (and releases its lock).
 *
 * @internal
 */
final class Held
{
    /** @var mixed the redlock_handle, null once freed */
    private mixed $handle;
    /** @var mixed the redlock_php_watch of a kept lock, else null */
    private mixed $watch = null;
    private bool $told = false;
    private bool $wasLost = false;
    private ?RedlockException $lostError = null;
    /** @var \WeakReference<Lock> */
    private \WeakReference $owner;

    public function __construct(private Gate $gate, Lock $owner, mixed $handle)
    {
        $this->handle = $handle;
        $this->owner = \WeakReference::create($owner);
        $gate->live[spl_object_id($this)] = $this;
    }

    /** Has the C library renew the lock until it is released (redlock_handle_watch). */
    public function keep(): void
    {
        $this->watch = redlock_php_watch_new($this->handle);
    }

    public function kept(): bool
    {
        return $this->watch !== null;
    }

    public function handle(): mixed
    {
        return $this->handle;
    }

    /**
     * Looks at the record of a kept lock's loss (the C library writes it on
     * its own thread): the first time it says lost, tells the owner, whose
     * onLost callbacks run here, on PHP's thread.
     */
    public function poll(): void
    {
        if ($this->told || $this->watch === null) {
            return;
        }
        $status = redlock_php_watch_status($this->watch);
        if ($status === 0) {
            return;
        }
        $this->told = true;
        $this->lostError = RedlockException::forCode($status, redlock_php_watch_message($this->watch));
        $this->owner->get()?->tellLost($this->lostError);
    }

    /** The error of a kept lock's loss, once polled; else null. */
    public function lostError(): ?RedlockException
    {
        return $this->lostError;
    }

    /** Whether the keys can have expired while held (redlock_handle_lost), also once released. */
    public function lost(): bool
    {
        if ($this->handle === null) {
            return $this->wasLost;
        }
        return $this->lostError !== null || redlock_handle_lost($this->handle) === 1;
    }

    public function validityMs(): int
    {
        return $this->handle === null ? 0 : redlock_handle_validity_ms($this->handle);
    }

    /** Counts one more hold (redlock_handle_reenter); false when it is lost or released. */
    public function reenter(): bool
    {
        if ($this->handle === null) {
            return false;
        }
        try {
            redlock_handle_reenter($this->handle);
        } catch (\Redlock\LockNotHeldException) {
            return false;
        }
        return true;
    }

    /** Gives back one hold: the holds left; 0 means the caller releases the last one. */
    public function leave(): int
    {
        return $this->handle === null ? 0 : redlock_handle_leave($this->handle);
    }

    public function holds(): int
    {
        return $this->handle === null ? 0 : redlock_handle_holds($this->handle);
    }

    /** Unlocks on the nodes and frees the handle; throws the unlock's failure (LockNotHeld...). */
    public function release(): void
    {
        $handle = $this->take();
        if ($handle === null) {
            throw new \Redlock\LockNotHeldException('the lock is not held', REDLOCK_ENOTHELD);
        }
        try {
            redlock_unlock($handle);
        } finally {
            $this->wasLost = $this->wasLost || redlock_handle_lost($handle) === 1;
            $this->free($handle);
        }
    }

    /** Unlocks on the nodes, ignoring failures, and frees the handle. */
    public function discard(): void
    {
        $handle = $this->take();
        if ($handle === null) {
            return;
        }
        try {
            redlock_unlock($handle);
        } catch (RedlockException) {
            // best effort: the lease ends it otherwise
        } finally {
            $this->wasLost = $this->wasLost || redlock_handle_lost($handle) === 1;
            $this->free($handle);
        }
    }

    private function take(): mixed
    {
        $handle = $this->handle;
        if ($handle !== null) {
            $this->wasLost = redlock_handle_lost($handle) === 1;
            $this->handle = null;
        }
        return $handle;
    }

    private function free(mixed $handle): void
    {
        redlock_handle_free($handle);   // ends the watch too
        if ($this->watch !== null) {
            // A loss recorded before the release is still told (lostError).
            $status = redlock_php_watch_status($this->watch);
            if ($status !== 0 && $this->lostError === null) {
                $this->lostError = RedlockException::forCode($status, redlock_php_watch_message($this->watch));
            }
            redlock_php_watch_free($this->watch);
            $this->watch = null;
        }
        unset($this->gate->live[spl_object_id($this)]);
    }
}
