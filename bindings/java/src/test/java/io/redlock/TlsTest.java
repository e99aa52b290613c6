package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.internal.RedlockNativeConstants;
import io.redlock.testing.RedisNodes;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Three TLS-only nodes (rediss://), with certificates made for the test: locks work over the C
 * library's TLS, and a certificate no trusted CA issued is a TlsException naming each node.
 */
class TlsTest {
    private static Path certs;
    private static RedisNodes nodes;

    @BeforeAll
    static void startNodes() throws Exception {
        certs = RedisNodes.makeCertificates();
        nodes = RedisNodes.startTls(3, certs);
    }

    @AfterAll
    static void stopNodes() throws Exception {
        nodes.close();
        RedisNodes.removeDirectory(certs);
    }

    private static Map<String, String> trusting(String ca, String... more) {
        Map<String, String> options = new HashMap<>(Map.of(
                "tls_ca_file", certs.resolve(ca).toString(), "connect_timeout_ms", "5000",
                "node_timeout_ms", "2000"));
        for (int i = 0; i < more.length; i += 2) {
            options.put(more[i], more[i + 1]);
        }
        return options;
    }

    @Test
    void locksOverTls() throws Exception {
        assertTrue(nodes.uris().stream().allMatch(uri -> uri.startsWith("rediss://")));
        try (Redlock client = Redlock.create(nodes.uris(), trusting("ca.crt"))) {
            RLock lock = client.getLock("tls-job");
            assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
            assertFalse(nodes.cli(1, "GET", "tls-job").isEmpty());
            assertTrue(lock.isLocked());
            lock.unlock();
            assertTrue(lock.tryLockAsync(0, 10, TimeUnit.SECONDS).get());
            lock.unlockAsync().get();
        }
    }

    @Test
    void aCertificateFromAnotherCaIsATlsException() {
        try (Redlock client = Redlock.create(nodes.uris(), trusting("other-ca.crt"))) {
            RLock lock = client.getLock("tls-job");
            TlsException e = assertThrows(TlsException.class,
                    () -> lock.tryLock(0, 10, TimeUnit.SECONDS));
            assertEquals(RedlockNativeConstants.REDLOCK_ETLS, e.getCode());
            assertTrue(e.getMessage().contains("TLS certificate check failed"), e.getMessage());
            for (String uri : nodes.uris()) {
                assertTrue(e.getMessage().contains(uri.replace("rediss://", "")), e.getMessage());
            }
            assertFalse(lock.isHeldByCurrentThread());
        }
    }

    @Test
    void verificationOffTakesAnyCertificate() throws Exception {
        try (Redlock client = Redlock.create(nodes.uris(),
                trusting("other-ca.crt", "tls_verify", "0"))) {
            RLock lock = client.getLock("tls-insecure");
            assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
            lock.unlock();
        }
    }
}
