package io.redlock.testing;

import io.redlock.Redlock;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * Three redis-server nodes for a test class, and two clients of them for each test, which
 * stand for two instances of a service; the test's name, for its locks.
 */
public abstract class TwoInstances {
    protected static RedisNodes nodes;
    protected Redlock clientA;
    protected Redlock clientB;
    protected String name;

    @BeforeAll
    static void startNodes() throws Exception {
        nodes = RedisNodes.start(3);
    }

    @AfterAll
    static void stopNodes() {
        nodes.close();
    }

    /** The options of both clients. */
    protected Map<String, String> options() {
        return Map.of();
    }

    @BeforeEach
    void createClients(TestInfo test) {
        clientA = Redlock.create(nodes.uris(), options());
        clientB = Redlock.create(nodes.uris(), options());
        name = test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void closeClients() {
        clientA.close();
        clientB.close();
    }
}
