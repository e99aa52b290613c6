package io.redlock;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * Two clients of the five nodes, made before each test and closed after it, and the test's
 * name to use for its resources.
 */
abstract class TwoClients extends FiveNodes {
    Redlock client;
    Redlock other;
    String name;

    /** The key prefix of both clients. */
    abstract String keyPrefix();

    /** Options of client besides the key prefix; other has none. */
    Map<String, String> clientOptions() {
        return Map.of();
    }

    @BeforeEach
    void createClients(TestInfo test) {
        Map<String, String> options = new HashMap<>(clientOptions());
        options.put("key_prefix", keyPrefix());
        client = Redlock.create(nodes.uris(), options);
        other = Redlock.create(nodes.uris(), Map.of("key_prefix", keyPrefix()));
        name = test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void closeClients() {
        client.close();
        other.close();
    }
}
