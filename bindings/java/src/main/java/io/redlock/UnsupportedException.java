package io.redlock;

/**
 * Not supported by this build of the library or this system (REDLOCK_EUNSUPPORTED), such as TLS
 * ({@code rediss://}) where OpenSSL 3's libssl.so.3 is not installed; or by the nodes: a multi,
 * read-write or fair lock or a semaphore needs scripts, and too many nodes run none (the message
 * names scripting and the nodes).
 */
public class UnsupportedException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public UnsupportedException(int code, String message) {
        super(code, message);
    }
}
