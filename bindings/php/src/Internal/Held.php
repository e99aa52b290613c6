<?php

declare(strict_types=1);

namespace Redlock\Internal;

use Redlock\Internal\Swoole\Driver;
use Redlock\Internal\Swoole\Keeper;
use Redlock\Lock;
use Redlock\LockNotHeldException;
use Redlock\RedlockException;

/**
 * One acquisition: the C handle, and for a kept lock what renews it: the C
 * library's thread (redlock_handle_watch, outside Swoole's coroutines),
 * whose record of a loss (redlock_php_watch) is read here, or inside a
 * coroutine the client's Swoole keeper (Swoole\Keeper), which marks it lost
 * and tells it. The client lists every Held not yet freed, so that close()
 * releases them before it frees the C client; the Lock that made it is
 * referred to weakly, so that a Lock no one refers to any more is destroyed
 * (and releases its lock).
 *
 * Its I/O (unlock, extend) goes through the Swoole driver when called in a
 * coroutine, else through the C library's blocking calls; a lock kept by
 * the C thread is extended and released by the blocking calls, wherever
 * called (that thread renews it until redlock_unlock).
 *
 * @internal
 */
final class Held
{
    /** @var mixed the redlock_handle, null once freed */
    private mixed $handle;
    /** @var mixed the redlock_php_watch of a lock kept by the C thread, else null */
    private mixed $watch = null;
    /** The Swoole keeper of a lock kept in a coroutine, and its id there. */
    private ?Keeper $keeper = null;
    private int $keptId = 0;
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

    /**
     * Has the lock renewed until it is released: in a coroutine by the
     * client's Swoole keeper, else by the C library's thread
     * (redlock_handle_watch).
     */
    public function keep(): void
    {
        if (Driver::inCoroutine()) {
            $keeper = $this->gate->swoole()->keeper();
            $this->keptId = $keeper->add($this, $this->handle);
            $this->keeper = $keeper;
        } else {
            $this->watch = redlock_php_watch_new($this->handle);
        }
    }

    public function kept(): bool
    {
        return $this->watch !== null || $this->keeper !== null;
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
        if ($this->keeper !== null) {
            // The Swoole keeper tells a loss from its coroutine; a lock whose
            // validity ran out is looked at now.
            if ($this->lostError === null && $this->handle !== null && $this->validityMs() <= 0) {
                $this->keeper->ask($this->keptId);
            }
            return;
        }
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

    /** The error of a kept lock's loss once its callbacks were told (or are being); else null. */
    public function toldError(): ?RedlockException
    {
        return $this->told ? $this->lostError : null;
    }

    /** @internal the Swoole keeper found the lock lost: true the first time */
    public function markLost(int $status, string $message): bool
    {
        if ($this->lostError !== null || $this->keeper === null) {
            return false;
        }
        $this->lostError = RedlockException::forCode($status, $message);
        return true;
    }

    /** @internal the Swoole keeper's coroutine tells the owner's onLost callbacks */
    public function tellLost(): void
    {
        if ($this->told || $this->lostError === null) {
            return;
        }
        $this->told = true;
        $this->owner->get()?->tellLost($this->lostError);
    }

    /** Extends the lease to $leaseMs from now (a kept lock: its renewals are planned from it). */
    public function extend(int $leaseMs): void
    {
        if ($this->handle === null) {
            throw new LockNotHeldException('the lock is not held', REDLOCK_ENOTHELD);
        }
        if ($this->keeper !== null && Driver::inCoroutine()) {
            $this->keeper->extend($this, $this->keptId, $leaseMs);
        } elseif ($this->watch === null && Driver::inCoroutine()) {
            $this->gate->swoole()->run(redlock_op_extend($this->handle, $leaseMs, redlock_now_ms()));
        } else {
            redlock_extend($this->handle, $leaseMs);
        }
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
        $this->finish($handle);
    }

    /** Unlocks on the nodes, ignoring failures, and frees the handle. */
    public function discard(): void
    {
        $handle = $this->take();
        if ($handle === null) {
            return;
        }
        try {
            $this->finish($handle);
        } catch (RedlockException) {
            // best effort: the lease ends it otherwise
        }
    }

    /**
     * Stops the renewal (a renewal under way ends first), unlocks on the
     * nodes, and frees the handle; throws the unlock's failure.
     */
    private function finish(mixed $handle): void
    {
        $renewing = false;
        if ($this->keeper !== null) {
            // No extension may follow the release.
            $renewing = $this->keeper->remove($this->keptId, $handle);
        }
        try {
            if ($this->watch === null && Driver::inCoroutine()) {
                $op = redlock_op_unlock($handle, redlock_now_ms());
                // The C library tells, once the release started, whether the
                // keys could have expired before it.
                $this->wasLost = $this->wasLost || redlock_handle_lost($handle) === 1;
                $this->gate->swoole()->run($op);
            } else {
                redlock_unlock($handle);
            }
        } finally {
            $this->wasLost = $this->wasLost || redlock_handle_lost($handle) === 1;
            // Outside a coroutine a renewal may still run (a release from
            // outside Swoole's coroutines): the keeper frees the handle once
            // it ended.
            $this->free($handle, !$renewing);
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

    private function free(mixed $handle, bool $now = true): void
    {
        if ($now) {
            redlock_handle_free($handle);   // ends the watch too
        }
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
        $this->gate->release();
    }
}
