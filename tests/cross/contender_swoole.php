<?php
/*
 * php -d extension=redlock.so contender_swoole.php PHP_DIR MODE NODES NAMES [KIND] -
 * contender.php run inside a Swoole coroutine: the same arguments and
 * output, with the Redlock classes driving the engine over coroutine
 * sockets. Sleeps yield (Swoole's hooks), so the client's own coroutines
 * (renewals, wake-ups) run meanwhile, as in a Swoole server.
 */

declare(strict_types=1);

if (!extension_loaded('swoole')) {
    fwrite(STDERR, "contender_swoole.php: the swoole extension is not loaded\n");
    exit(2);
}
Swoole\Runtime::enableCoroutine(SWOOLE_HOOK_SLEEP);
$status = 0;
Swoole\Coroutine\run(static function () use ($argv, &$status): void {
    try {
        require __DIR__ . '/contender.php';
    } catch (Swoole\ExitException $e) {
        $status = (int) $e->getStatus();
    }
});
exit($status);
