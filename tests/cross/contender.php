<?php
/*
 * php -d extension=redlock.so contender.php PHP_DIR MODE NODES NAMES [KIND] -
 * one contender of the cross-language tests, on the Redlock classes of
 * PHP_DIR (bindings/php: its autoload.php). NODES and NAMES are
 * comma-separated; several names make a multi-lock. KIND (one name):
 * "plain" (the default), "read" or "write" (a read-write lock's), "fair",
 * or "permits=N" (a permit of a semaphore of N).
 * MODE "try": one attempt, released at once when taken; "hold": one attempt,
 * held until a line arrives on standard input. Prints "acquired" then
 * "released", or "refused".
 * MODE "rules": the scenarios of the rules every language follows
 * (docs/locks.md) on resources named after NAMES' first one; prints one line
 * of observations per rule, which test_parity.py compares across languages.
 * MODE "messages": the same bad inputs as every language's (seconds here);
 * prints each case and the library's message for it.
 */

declare(strict_types=1);

use Redlock\Client;
use Redlock\ClientClosedException;
use Redlock\InvalidArgumentException;
use Redlock\LockNotHeldException;

[, $dir, $mode, $nodesCsv, $namesCsv] = $argv;
$kind = $argv[5] ?? 'plain';
require $dir . '/autoload.php';
$nodes = explode(',', $nodesCsv);
$names = explode(',', $namesCsv);

function yes(bool $cond): string
{
    return $cond ? 'yes' : 'no';
}

/** A call's outcome as one word: "ok", or "notheld". */
function word(callable $call): string
{
    try {
        $call();
    } catch (LockNotHeldException) {
        return 'notheld';
    }
    return 'ok';
}

/** "closed" when $call throws ClientClosedException, else "open". */
function closed(callable $call): string
{
    try {
        $call();
    } catch (ClientClosedException) {
        return 'closed';
    }
    return 'open';
}

/** The message of the InvalidArgumentException $call throws. */
function message(callable $call): string
{
    try {
        $call();
    } catch (InvalidArgumentException $e) {
        return $e->getMessage();
    }
    return 'accepted';
}

if ($mode === 'messages') {
    $c = new Client($nodes);
    $lock = $c->getLock($names[0]);
    echo 'negative-lease ', message(fn () => $lock->tryLock(0, -1.0)), "\n";
    echo 'zero-lease ', message(fn () => $lock->tryLock(0, 0)), "\n";
    echo 'long-lease ', message(fn () => $lock->tryLock(0, 30 * 24 * 3600)), "\n";
    echo 'negative-wait ', message(fn () => $lock->tryLock(-1.0, 1.0)), "\n";
    echo 'zero-permits ', message(fn () => $c->getSemaphore('s', 0)), "\n";
    echo 'empty-uri ', message(fn () => Client::splitNodes(' ,redis://a')), "\n";
    exit(0);
}

if ($mode === 'rules') {
    $base = $names[0];
    $c = new Client($nodes, ['watchdog_lease_ms' => 900]);
    $other = new Client($nodes);

    // Reentry of a kept lock with a short lease: the keys keep their lease,
    // renewal goes on.
    $kept = $c->getLock("$base:kept");
    $kept->lock();
    $again = $kept->tryLock(1.0, 0.15);
    $holds = $kept->getHoldCount();
    $ttl = $kept->remainTimeToLive();
    $keptLease = $c->getLock("$base:kept-lease");
    $keptLease->tryLock(0, null) or exit(1);
    usleep(1_200_000);
    printf("reentry-kept again=%s holds=%d ttl_kept=%s held=%s lost=%s unlock=%s,%s\n", yes($again), $holds,
        yes($ttl !== null && $ttl > 0.15), yes($kept->getValidity() > 0), yes($kept->isLost()),
        word(fn () => $kept->unlock()), word(fn () => $kept->unlock()));
    printf("kept-lease held=%s lost=%s unlock=%s\n", yes($keptLease->getValidity() > 0),
        yes($keptLease->isLost()), word(fn () => $keptLease->unlock()));

    // Reentry of a lease with no lease: not renewed, lost once it ran out.
    $leased = $c->getLock("$base:leased");
    $leased->tryLock(0, 0.3) or exit(1);
    $again = $leased->tryLock();
    $holds = $leased->getHoldCount();
    $ttl = $leased->remainTimeToLive();
    usleep(450_000);
    $lost = $leased->isLost();
    printf("reentry-lease again=%s holds=%d ttl_first=%s lost=%s unlock=%s,%s\n", yes($again), $holds,
        yes($ttl !== null && $ttl <= 0.3), yes($lost), word(fn () => $leased->unlock()),
        word(fn () => $leased->unlock()));

    // Acquiring again after a loss starts afresh.
    $fresh = $c->getLock("$base:afresh");
    ($fresh->tryLock(0, 0.3) && $fresh->tryLock(0, 0.3)) or exit(1);
    usleep(450_000);
    $lost = $fresh->isLost();
    $afresh = $fresh->tryLock() ? 'ok' : 'locked';
    printf("afresh lost=%s again=%s holds=%d lost=%s unlock=%s\n", yes($lost), $afresh,
        $fresh->getHoldCount(), yes($fresh->isLost()), word(fn () => $fresh->unlock()));

    // The default wait: tryLock() once, lock() until acquired.
    $holder = $other->getLock("$base:wait");
    $holder->tryLock(0, 0.4) or exit(1);
    $waiter = $c->getLock("$base:wait");
    $started = microtime(true);
    $tried = $waiter->tryLock() ? 'ok' : 'locked';
    $once = microtime(true) - $started < 0.3;
    $locked = word(fn () => $waiter->lock(5.0));
    printf("wait try=%s once=%s lock=%s waited=%s\n", $tried, yes($once), $locked,
        yes(microtime(true) - $started >= 0.3));
    $waiter->unlock();

    // A multi-lock's answer: locked when any resource is, for the longest.
    $multi = $c->getMultiLock("$base:ma", "$base:mb", "$base:mc");
    $free = !$multi->isLocked();
    [$b, $d] = [$other->getLock("$base:mb"), $other->getLock("$base:mc")];
    ($b->tryLock(0, 3.0) && $d->tryLock(0, 8.0)) or exit(1);
    $left = $multi->remainTimeToLive();
    printf("multi free=%s locked=%s longest=%s\n", yes($free), yes($multi->isLocked()),
        yes($left !== null && $left > 7.0 && $left <= 8.0));
    $b->unlock();
    $d->unlock();

    // close() releases what is held; every later call throws.
    $closing = new Client($nodes);
    $held = $closing->getLock("$base:closed");
    $held->tryLock(0, 10.0) or exit(1);
    $closing->close();
    $released = !$other->getLock("$base:closed")->isLocked();
    printf("closed released=%s get=%s try=%s unlock=%s\n", yes($released),
        closed(fn () => $closing->getLock('x')), closed(fn () => $held->tryLock()),
        closed(fn () => $held->unlock()));
    exit(0);
}

$client = new Client($nodes);
if (str_starts_with($kind, 'permits=')) {
    $lock = $client->getSemaphore($names[0], (int) substr($kind, strlen('permits=')))->tryAcquire(0, 30.0);
    $taken = $lock !== null;
} else {
    $lock = match ($kind) {
        'read' => $client->getReadWriteLock($names[0])->readLock(),
        'write' => $client->getReadWriteLock($names[0])->writeLock(),
        'fair' => $client->getFairLock($names[0]),
        default => count($names) === 1 ? $client->getLock($names[0]) : $client->getMultiLock(...$names),
    };
    $taken = $lock->tryLock(0, 30.0);
}
if (!$taken) {
    echo "refused\n";
    exit(0);
}
echo "acquired\n";
if ($mode === 'hold') {
    fgets(STDIN);
}
$lock->unlock();
echo "released\n";
