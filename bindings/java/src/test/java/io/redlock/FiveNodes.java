package io.redlock;

import io.redlock.testing.RedisNodes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** Five redis-server nodes, started before a test class's tests and stopped after them. */
abstract class FiveNodes {
    static RedisNodes nodes;

    @BeforeAll
    static void startNodes() throws Exception {
        nodes = RedisNodes.start(5);
    }

    @AfterAll
    static void stopNodes() {
        nodes.close();
    }
}
