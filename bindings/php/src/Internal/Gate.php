<?php

declare(strict_types=1);

namespace Redlock\Internal;

use Redlock\ClientClosedException;
use Redlock\Internal\Swoole\Driver;

/**
 * A client's C state: the redlock_ctx, its acquisitions not yet freed, its
 * event queue and logger, and whether it is closed (docs/locks.md, "A
 * closed client"). Every call that gives C the ctx asks ctx() for it, which
 * throws once the client is closed; close() releases what is still held,
 * then frees the ctx, so no call ever reaches a freed ctx or handle.
 *
 * poll() brings to PHP's thread what the C library recorded on its own
 * (PHP has no other thread to run them on): the events for the logger and
 * the losses of kept locks, whose onLost callbacks it runs. Every call of
 * the API polls, before it calls C and after.
 *
 * Inside Swoole coroutines the client's calls drive the engine over its
 * Swoole driver (swoole(), made by the first such call), whose coroutines
 * (readers, wake-ups, renewals, deliveries) may outlive a call, and close():
 * so the ctx is freed once the client is closed and the last of them ended,
 * and no handle is left (release()).
 *
 * @internal
 */
final class Gate
{
    /** @var array<int, Held> */
    public array $live = [];
    private bool $closed = false;
    /** @var mixed the redlock_php_log queue, when there is a logger */
    private mixed $log = null;
    /** @var (callable(string, string, array<string, mixed>): mixed)|null */
    private $logger;
    private bool $polling = false;
    private bool $closing = false;
    private ?Driver $swoole = null;

    /**
     * @param mixed $ctx the redlock_ctx
     * @param object|callable|null $logger a PSR-3 logger (an object with log()) or a callable of its shape
     */
    public function __construct(private mixed $ctx, object|callable|null $logger, string $level)
    {
        if ($logger === null) {
            return;
        }
        if (!is_callable($logger)) {
            if (!method_exists($logger, 'log')) {
                throw new \TypeError('logger must be a PSR-3 logger (with log()) or a callable, not '
                    . get_debug_type($logger));
            }
            $logger = [$logger, 'log'];
        }
        if (!isset(Native::LEVELS[$level])) {
            throw new \Redlock\InvalidArgumentException(
                "log_level must be one of debug, info, notice, warning, error, not '$level'", REDLOCK_EINVAL);
        }
        $this->logger = $logger;
        $this->log = redlock_php_log_new($ctx, Native::LEVELS[$level]);
    }

    /** The C client for a call named $what; ClientClosedException once closed. */
    public function ctx(string $what): mixed
    {
        if ($this->closed) {
            throw new ClientClosedException($what);
        }
        return $this->ctx;
    }

    public function closed(): bool
    {
        return $this->closed;
    }

    /** The client's Swoole driver (for calls inside coroutines), made on first use. */
    public function swoole(): Driver
    {
        if ($this->ctx === null) {
            throw new ClientClosedException();
        }
        return $this->swoole ??= new Driver($this, $this->ctx);
    }

    /** Hands the queued events to the logger and tells the kept locks' losses. */
    public function poll(): void
    {
        if ($this->polling) {
            return;   // a callback calling into the client
        }
        $this->polling = true;
        try {
            $this->drainEvents();
            foreach ($this->live as $held) {
                $held->poll();
            }
        } finally {
            $this->polling = false;
        }
    }

    /** Releases what is still held (best effort), then frees the C client; once. */
    public function close(): void
    {
        if ($this->closed) {
            return;
        }
        $this->poll();
        $this->closed = true;
        $this->closing = true;
        try {
            foreach ($this->live as $held) {
                $held->discard();
            }
            $this->swoole?->close();
        } finally {
            $this->closing = false;
        }
        $this->release();
    }

    /**
     * Frees the C client once it is closed and nothing uses it any more: no
     * handle left, and the Swoole driver's coroutines ended (each calls this
     * as it ends).
     */
    public function release(): void
    {
        if (!$this->closed || $this->closing || $this->ctx === null || $this->live !== []) {
            return;
        }
        if ($this->swoole !== null) {
            if (!$this->swoole->idle()) {
                return;
            }
            $this->swoole->free();
        }
        redlock_ctx_free($this->ctx);
        $this->ctx = null;
        if ($this->log !== null) {
            $this->drainEvents();
            redlock_php_log_free($this->log);
            $this->log = null;
        }
    }

    private function drainEvents(): void
    {
        if ($this->log === null) {
            return;
        }
        $names = [REDLOCK_LOG_DEBUG => 'debug', REDLOCK_LOG_INFO => 'info',
                  REDLOCK_LOG_WARN => 'warning', REDLOCK_LOG_ERROR => 'error'];
        while (($level = redlock_php_log_pop($this->log)) !== 0) {
            $event = redlock_php_log_event($this->log);
            $message = redlock_php_log_message($this->log);
            try {
                ($this->logger)($names[$level] ?? 'info', "$event $message",
                    ['event' => $event, 'level' => $level]);
            } catch (\Throwable $e) {
                // A logger that fails must not fail the lock call.
                error_log('redlock: the logger failed: ' . $e->getMessage());
            }
        }
    }
}
