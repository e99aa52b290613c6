<?php

declare(strict_types=1);

namespace Redlock\Internal\Swoole;

use Swoole\Coroutine\Channel;

/**
 * A wake-up for one waiting coroutine (the ngx.semaphore of the cosocket
 * driver): post() ends its wait, or the next one when it is not waiting;
 * posts before a wait count as one. A Swoole channel of one slot: a post to a
 * waiting coroutine resumes it at once, so after post() the caller looks at
 * its state again before going on.
 *
 * @internal
 */
final class Signal
{
    private Channel $channel;

    public function __construct()
    {
        $this->channel = new Channel(1);
    }

    public function post(): void
    {
        if ($this->channel->isEmpty()) {
            $this->channel->push(true);
        }
    }

    /** Waits up to $ms milliseconds (at least 1; null: until posted); true when posted. */
    public function wait(?int $ms): bool
    {
        return $this->channel->pop($ms === null ? -1 : max(1, $ms) / 1000) !== false;
    }

    /** Whether a post waits to be taken. */
    public function posted(): bool
    {
        return !$this->channel->isEmpty();
    }
}
