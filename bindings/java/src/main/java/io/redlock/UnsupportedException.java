package io.redlock;

/**
 * Not supported by this build of the library or this system (REDLOCK_EUNSUPPORTED), such as TLS
 * ({@code rediss://}) where OpenSSL 3's libssl.so.3 is not installed.
 */
public class UnsupportedException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public UnsupportedException(int code, String message) {
        super(code, message);
    }
}
