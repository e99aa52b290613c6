<?php

declare(strict_types=1);

namespace Redlock\Internal\Swoole;

use Swoole\Coroutine\Socket;

/**
 * A subscriber connection of Wakes to one node.
 *
 * @internal
 */
final class Sub
{
    public bool $connected = false;
    public bool $dead = false;
    public bool $dropped = false;

    public function __construct(public int $node, public ?Socket $sock)
    {
    }
}
