<?php
/*
 * holder.php NODES NAME KIND HOLD_MS - another process holding a lock for
 * the tests: takes NAME (KIND: plain, read, write, fair, or permits=N) with
 * a 30 s lease, prints "acquired", releases it after HOLD_MS ms (or when its
 * standard input closes, with HOLD_MS -1), prints "released".
 */

declare(strict_types=1);

require __DIR__ . '/../autoload.php';

[, $nodes, $name, $kind, $holdMs] = $argv;
$client = new Redlock\Client(explode(',', $nodes));
if (str_starts_with($kind, 'permits=')) {
    $lock = $client->getSemaphore($name, (int) substr($kind, 8))->tryAcquire(0, 30.0);
    $taken = $lock !== null;
} else {
    $lock = match ($kind) {
        'read' => $client->getReadWriteLock($name)->readLock(),
        'write' => $client->getReadWriteLock($name)->writeLock(),
        'fair' => $client->getFairLock($name),
        default => $client->getLock($name),
    };
    $taken = $lock->tryLock(0, 30.0);
}
if (!$taken) {
    echo "refused\n";
    exit(0);
}
echo "acquired\n";
if ((int) $holdMs >= 0) {
    usleep((int) $holdMs * 1000);
} else {
    stream_get_contents(STDIN);
}
$lock->unlock();
echo "released\n";
