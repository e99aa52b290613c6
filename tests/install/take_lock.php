<?php
/*
 * take_lock.php NAME NODE... - with the installed redlock extension (loaded
 * by PHP's own configuration: extension=redlock) and the installed PHP
 * layer (redlock/autoload.php, found on the include_path), takes the lock
 * NAME for 10 s, sees a second client refused, extends it to 20 s, releases
 * it and sees the second client take it; then a kept lock (no lease) and
 * synchronized(); a bad URI throws the layer's InvalidArgumentException.
 */

declare(strict_types=1);

require 'redlock/autoload.php';

use Redlock\Client;
use Redlock\InvalidArgumentException;

function check(bool $ok, string $what): void
{
    if (!$ok) {
        fwrite(STDERR, "FAIL: $what\n");
        exit(1);
    }
}

$name = $argv[1];
$nodes = array_slice($argv, 2);
check(extension_loaded('redlock'), 'the extension is not loaded');
check(str_starts_with((new ReflectionClass(Client::class))->getFileName(),
    stream_resolve_include_path('redlock/src')), 'Redlock\\Client is not the installed one');

$client = new Client($nodes);
$rival = new Client($nodes);
$lock = $client->getLock($name);
check($lock->tryLock(0, 10.0), 'the lock is not taken');
check($lock->getValidity() > 0 && $lock->getValidity() <= 10.0, 'validity ' . $lock->getValidity());
check(!$rival->getLock($name)->tryLock(0, 10.0), 'the rival takes a held lock');
$lock->extend(20.0);
check($lock->getValidity() > 10.0, 'extended to ' . $lock->getValidity() . ' s, not 20');
$lock->unlock();
check(!$lock->isHeld(), 'still held after unlock()');
$other = $rival->getLock($name);
check($other->tryLock(0, 10.0), 'the rival cannot take the released lock');
$other->unlock();

$kept = $client->getLock("$name:kept");
$kept->lock();
check($kept->isHeld() && $kept->isLocked(), 'the kept lock is not held');
$kept->unlock();
check($client->synchronized("$name:sync", fn () => 42, 1.0, 5.0) === 42, 'synchronized()');

try {
    new Client(['nota://uri']);
    check(false, 'a bad URI is accepted');
} catch (InvalidArgumentException $e) {
    check($e->getCode() === REDLOCK_EINVAL, 'the bad URI\'s code is ' . $e->getCode());
}
printf("installed redlock %s extension takes, extends and releases locks: PHP %s %s\n",
    redlock_version_string(), PHP_VERSION, PHP_ZTS ? 'ZTS' : 'NTS');
