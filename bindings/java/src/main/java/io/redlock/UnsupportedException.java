package io.redlock;

/**
 * Not supported by this build of the library (REDLOCK_EUNSUPPORTED), such as TLS ({@code
 * rediss://}).
 */
public class UnsupportedException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public UnsupportedException(int code, String message) {
        super(code, message);
    }
}
