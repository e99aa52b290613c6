<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Redlock\TlsException;
use Swoole\Coroutine;

/**
 * rediss:// nodes inside Swoole coroutines: Swoole's own TLS with the
 * library's tls_* settings, for the lock calls' connections and for the
 * subscribers that wake waiting locks. Three TLS-only nodes of its own
 * (scripts/redis-nodes.sh --tls), with the certificates of
 * tests/support/tls-certs.sh.
 */
final class SwooleTlsTest extends TestCase
{
    private static string $dir = '';
    private static string $certs = '';
    /** @var list<string> */
    private static array $uris = [];

    public static function setUpBeforeClass(): void
    {
        $root = dirname(Nodes::script(), 2);
        self::$dir = sys_get_temp_dir() . '/redlock-php-tls-' . getmypid() . '-' . bin2hex(random_bytes(4));
        self::$certs = self::$dir . '/certs';
        exec(escapeshellarg("$root/tests/support/tls-certs.sh") . ' ' . escapeshellarg(self::$certs) . ' 2>&1', $out, $rc);
        if ($rc !== 0) {
            throw new RuntimeException('tls-certs.sh failed: ' . implode("\n", $out));
        }
        exec(escapeshellarg(Nodes::script()) . ' start ' . escapeshellarg(self::$dir . '/nodes') . ' 3 --tls '
            . escapeshellarg(self::$certs) . ' 2>&1', $out, $rc);
        if ($rc !== 0) {
            throw new RuntimeException('could not start TLS nodes: ' . implode("\n", $out));
        }
        self::$uris = preg_split('/\s+/', trim(file_get_contents(self::$dir . '/nodes/uris')));
    }

    public static function tearDownAfterClass(): void
    {
        exec(escapeshellarg(Nodes::script()) . ' stop ' . escapeshellarg(self::$dir . '/nodes'));
        exec('rm -rf ' . escapeshellarg(self::$dir));
    }

    public function testLocksAndWakeUpsGoOverTls(): void
    {
        $this->assertStringStartsWith('rediss://', self::$uris[0]);
        $name = Nodes::name('swoole-tls');
        $options = ['tls_ca_file' => self::$certs . '/ca.crt', 'tls_server_name' => 'localhost',
                    'retry_delay_ms' => 60000, 'retry_jitter_ms' => 0];
        Coroutines::run(function () use ($name, $options): void {
            $client = new Redlock\Client(self::$uris, $options);
            $other = new Redlock\Client(self::$uris, $options);
            try {
                $holder = $client->getLock($name);
                $this->assertTrue($holder->tryLock(0, 30.0));
                Coroutine::create(static function () use ($holder): void {
                    Coroutine::sleep(0.3);
                    $holder->unlock();
                });
                // Woken through a TLS subscriber, not by its timer (a minute).
                $waiter = $other->getLock($name);
                $this->assertTrue($waiter->tryLock(10.0, 10.0));
                $waiter->unlock();
            } finally {
                $client->close();
                $other->close();
            }
        });
    }

    public function testAnUntrustedCertificateIsRefused(): void
    {
        Coroutines::run(function (): void {
            $client = new Redlock\Client(self::$uris,
                ['tls_ca_file' => self::$certs . '/other-ca.crt', 'tls_server_name' => 'localhost']);
            try {
                $client->getLock(Nodes::name('swoole-tls-untrusted'))->tryLock(0, 5.0);
                $this->fail('a node whose certificate no trusted CA issued');
            } catch (TlsException $e) {
                $this->assertSame(REDLOCK_ETLS, $e->getCode());
                $this->assertStringContainsString('TLS certificate check failed', $e->getMessage());
            } finally {
                $client->close();
            }
        });
    }

    public function testAnAddressNeedsTheServerName(): void
    {
        Coroutines::run(function (): void {
            $client = new Redlock\Client(self::$uris, ['tls_ca_file' => self::$certs . '/ca.crt']);
            try {
                $client->getLock(Nodes::name('swoole-tls-address'))->tryLock(0, 5.0);
                $this->fail('a certificate checked for an address');
            } catch (TlsException $e) {
                $this->assertStringContainsString('tls_server_name', $e->getMessage());
            } finally {
                $client->close();
            }
            // Unchecked (tls_verify 0), the session is made all the same.
            $insecure = new Redlock\Client(self::$uris, ['tls_verify' => 0]);
            try {
                $lock = $insecure->getLock(Nodes::name('swoole-tls-insecure'));
                $this->assertTrue($lock->tryLock(0, 5.0));
                $lock->unlock();
            } finally {
                $insecure->close();
            }
        });
    }
}
