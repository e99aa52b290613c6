<?php

declare(strict_types=1);

namespace Redlock\Internal\Swoole;

use Swoole\Coroutine\Socket;

/**
 * TLS to rediss:// nodes with Swoole's own (OpenSSL, as the coroutine
 * socket's setProtocol() takes it), with the settings the library's
 * blocking calls use: redlock_ctx_tls_* from the client's tls_* options
 * (their checks included): the check on or off, the trusted CAs (a file, a
 * directory, else the system's), the client's certificate and key, the
 * lowest protocol version. The node's certificate is checked by name (the
 * option tls_server_name, or the node's host, sent as SNI); Swoole checks no
 * IP address, so a node named by its address needs tls_server_name when
 * certificates are checked.
 *
 * @internal
 */
final class Tls
{
    /** @var array<string, mixed>|null Swoole's settings, once made */
    private ?array $settings = null;
    private ?string $failure = null;

    /** @param mixed $ctx the redlock_ctx */
    public function __construct(private mixed $ctx)
    {
    }

    /**
     * The TLS handshake on $sock, just connected, with a node whose
     * certificate must be for $name (an address when $isIp): null when done,
     * else why (for redlock_conn_tls_failed).
     */
    public function handshake(Socket $sock, string $name, bool $isIp, int $timeoutMs): ?string
    {
        $settings = $this->settings();
        if (is_string($settings)) {
            return $settings;
        }
        if ($settings['ssl_verify_peer'] && $isIp) {
            return "TLS: under Swoole a certificate is checked by name only, and $name is an "
                . "address: set tls_server_name to the name in the nodes' certificates";
        }
        if (!$isIp) {
            $settings['ssl_host_name'] = $name;
        }
        $settings['read_timeout'] = $timeoutMs / 1000;
        $settings['write_timeout'] = $timeoutMs / 1000;
        if (!$sock->setProtocol($settings)) {
            return 'TLS: cannot use the client certificate or key (' . $sock->errMsg . ')';
        }
        if ($sock->sslHandshake()) {
            return null;
        }
        // (Swoole tells why in its own log, not on the socket: its last error.)
        $code = $sock->errCode !== 0 ? $sock->errCode : swoole_last_error();
        $why = $sock->errMsg !== '' ? $sock->errMsg : swoole_strerror($code, 9);
        if ($code === SWOOLE_ERROR_SSL_VERIFY_FAILED) {
            return "TLS certificate check failed: the node's certificate is not trusted, or not for $name ($why)";
        }
        return "TLS handshake failed: $why";
    }

    /** @return array<string, mixed>|string Swoole's settings, or why they cannot be made */
    private function settings(): array|string
    {
        if ($this->settings !== null || $this->failure !== null) {
            return $this->settings ?? $this->failure;
        }
        $ctx = $this->ctx;
        if (redlock_ctx_tls_check($ctx) !== REDLOCK_OK) {
            return $this->failure = redlock_errmsg();
        }
        $verify = redlock_ctx_tls_verify($ctx) === 1;
        $settings = [
            'open_ssl' => true,
            'ssl_verify_peer' => $verify,
            'ssl_allow_self_signed' => false,
            'ssl_protocols' => self::protocols(redlock_ctx_tls_min_version($ctx)),
        ];
        $caFile = redlock_ctx_tls_ca_file($ctx);
        $caDir = redlock_ctx_tls_ca_dir($ctx);
        if ($caFile !== null) {
            $settings['ssl_cafile'] = $caFile;
        }
        if ($caDir !== null) {
            $settings['ssl_capath'] = $caDir;
        } elseif (!$verify && $caFile === null) {
            // Swoole makes an SSL context per socket and, given no CA, loads
            // the system's whole bundle into each (tens of ms, enough to miss
            // connect_timeout_ms when several connect at once). Unchecked,
            // no CA is read: a folder, looked into only on demand, costs nothing.
            $settings['ssl_capath'] = sys_get_temp_dir();
        }
        $cert = redlock_ctx_tls_cert_file($ctx);
        if ($cert !== null) {
            $settings['ssl_cert_file'] = $cert;
            $settings['ssl_key_file'] = redlock_ctx_tls_key_file($ctx) ?? $cert;
        }
        return $this->settings = $settings;
    }

    /** Swoole's protocols from the lowest version accepted (TLS's number: 0x0303 is TLS 1.2) up. */
    private static function protocols(int $min): int
    {
        $versions = [0x0301 => SWOOLE_SSL_TLSv1, 0x0302 => SWOOLE_SSL_TLSv1_1,
                     0x0303 => SWOOLE_SSL_TLSv1_2, 0x0304 => SWOOLE_SSL_TLSv1_3];
        $protocols = 0;
        foreach ($versions as $version => $bit) {
            if ($version >= $min) {
                $protocols |= $bit;
            }
        }
        return $protocols !== 0 ? $protocols : SWOOLE_SSL_TLSv1_3;
    }
}
