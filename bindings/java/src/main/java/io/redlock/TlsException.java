package io.redlock;

/**
 * A TLS handshake or certificate check failed (REDLOCK_ETLS), on {@code rediss://} nodes: the
 * message names each node and why, such as "TLS certificate check failed: certificate has
 * expired".
 */
public class TlsException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public TlsException(int code, String message) {
        super(code, message);
    }
}
