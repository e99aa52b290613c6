/*
 * test_topo_support.c - the test support for topologies (tests/support/topo.h)
 * does what it says, checked with raw commands only: a Sentinel group fails
 * over (forced, and after its master stops), servers restart with and
 * without their data; a Cluster of three masters moves a slot step by step
 * (MIGRATING/IMPORTING, ASK, MOVED) and fails a master over. And the
 * engine's key slot (core/engine/slots.c) against CLUSTER KEYSLOT.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <cmocka.h>

#include "nodes.h"
#include "slots.h"
#include "topo.h"

#define SETTLE_MS 30000

/* The reply to one command on i as text ("OK", "PONG", an error's text, a
 * string's value; "(nil)"; "(int) N"), compared with want. The command is
 * formatted, then split at spaces into its arguments. */
static void expect(topo *t, size_t i, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void expect(topo *t, size_t i, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char cmd[256], words[256];
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    memcpy(words, cmd, sizeof words);
    const char *argv[16];
    int argc = 0;
    for (char *w = strtok(words, " "); w != NULL && argc < 16; w = strtok(NULL, " "))
        argv[argc++] = w;
    redisReply *r = topo_cmd_argv(t, i, argc, argv, NULL);
    assert_non_null(r);
    char got[512];
    if (r->type == REDIS_REPLY_NIL)
        snprintf(got, sizeof got, "(nil)");
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(got, sizeof got, "(int) %lld", r->integer);
    else if (r->str != NULL)
        snprintf(got, sizeof got, "%s", r->str);
    else
        snprintf(got, sizeof got, "(type %d)", r->type);
    freeReplyObject(r);
    if (strcmp(got, want) != 0)
        fail_msg("%s on %s: got '%s', want '%s'", cmd, topo_addr(t, i), got, want);
}

static void expect_role(topo *t, size_t i, const char *role)
{
    char *got = topo_info(t, i, "replication", "role");
    if (got == NULL || strcmp(got, role) != 0)
        fail_msg("%s: role %s, want %s", topo_addr(t, i), got ? got : "(none)", role);
    free(got);
}

/* ---- Sentinel ---- */

static void sentinel_group(void **state)
{
    (void)state;
    long long t0 = now_ms();
    topo *t = topo_sentinel_start(2, 3, "mymaster");
    assert_non_null(t);
    fprintf(stderr, "# a Sentinel group of 3 servers and 3 sentinels started in %lld ms\n",
            now_ms() - t0);
    assert_int_equal(topo_count(t), 6);

    /* The URI names the three sentinels and the master's name. */
    char uri[256];
    snprintf(uri, sizeof uri, "redis-sentinel://%s,%s,%s?sentinelMasterId=mymaster",
             topo_addr(t, topo_sentinel(t, 0)), topo_addr(t, topo_sentinel(t, 1)),
             topo_addr(t, topo_sentinel(t, 2)));
    assert_string_equal(topo_uri(t), uri);
    for (size_t j = 0; j < 3; j++)
        assert_true(topo_is_sentinel(t, topo_sentinel(t, j)));
    assert_false(topo_is_sentinel(t, 2));

    assert_int_equal(topo_sentinel_master(t), 0);
    assert_string_equal(topo_master_addr(t), topo_addr(t, 0));
    expect_role(t, 0, "master");
    expect_role(t, 1, "slave");
    expect_role(t, 2, "slave");
    expect(t, 0, "OK", "SET k v1");
    assert_int_equal(topo_wait_sync(t, 0, SETTLE_MS), 2);
    expect(t, 1, "v1", "GET k");
    expect(t, 2, "READONLY You can't write against a read only replica.", "SET k x");

    /* A forced failover: a replica takes over, the old master follows it. */
    t0 = now_ms();
    int m = topo_sentinel_failover(t, SETTLE_MS);
    assert_true(m == 1 || m == 2);
    fprintf(stderr, "# SENTINEL FAILOVER settled (all sentinels, old master a replica in sync) "
            "in %lld ms\n", now_ms() - t0);
    assert_int_equal(topo_sentinel_master(t), m);
    assert_string_equal(topo_master_addr(t), topo_addr(t, (size_t)m));
    expect_role(t, (size_t)m, "master");
    expect_role(t, 0, "slave");
    expect(t, (size_t)m, "v1", "GET k");
    expect(t, (size_t)m, "OK", "SET k v2");
    assert_int_equal(topo_wait_sync(t, (size_t)m, SETTLE_MS), 2);
    expect(t, 0, "v2", "GET k");
    expect(t, 0, "READONLY You can't write against a read only replica.", "SET k x");
    for (size_t j = 0; j < 3; j++) {
        redisReply *r = topo_cmd(t, topo_sentinel(t, j), "SENTINEL GET-MASTER-ADDR-BY-NAME mymaster");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(atoi(r->element[1]->str), topo_port(t, (size_t)m));
        freeReplyObject(r);
    }

    /* The master stops (SIGSTOP): the sentinels elect another. */
    t0 = now_ms();
    assert_int_equal(topo_pause(t, (size_t)m), 0);
    assert_true(topo_is_paused(t, (size_t)m));
    int m2 = topo_sentinel_wait_new_master(t, m, SETTLE_MS);
    assert_true(m2 >= 0 && m2 != m);
    fprintf(stderr, "# a stopped master replaced in %lld ms\n", now_ms() - t0);
    assert_int_equal(topo_resume(t, (size_t)m), 0);
    t0 = now_ms();
    /* Back, it is turned into a replica of the new master. */
    long long deadline = now_ms() + SETTLE_MS;
    for (;;) {
        char *role = topo_info(t, (size_t)m, "replication", "role");
        int done = role != NULL && strcmp(role, "slave") == 0;
        free(role);
        if (done || now_ms() > deadline)
            break;
        sleep_ms(20);
    }
    expect_role(t, (size_t)m, "slave");
    fprintf(stderr, "# the resumed old master became a replica in %lld ms\n", now_ms() - t0);
    expect(t, (size_t)m2, "v2", "GET k");

    /* The master killed and restarted with its data, before the sentinels
     * would act: its data are there (the append-only file). */
    expect(t, (size_t)m2, "OK", "SET k v3");
    assert_int_equal(topo_kill(t, (size_t)m2), 0);
    assert_false(topo_is_running(t, (size_t)m2));
    assert_int_equal(topo_restart(t, (size_t)m2, true), 0);
    expect(t, (size_t)m2, "v3", "GET k");

    /* A replica restarted without data comes back empty, then syncs. */
    size_t r = 0;
    while ((int)r == m2)
        r++;
    assert_int_equal(topo_kill(t, r), 0);
    expect(t, (size_t)m2, "OK", "SET only-on-master yes");
    assert_int_equal(topo_restart(t, r, false), 0);
    char *aof = topo_info(t, r, "persistence", "aof_enabled");
    assert_string_equal(aof, "0");
    free(aof);
    assert_int_equal(topo_sentinel_wait_new_master(t, -1, SETTLE_MS), m2);
    expect(t, r, "yes", "GET only-on-master");

    /* A master restarted without its data comes back empty. */
    assert_int_equal(topo_kill(t, (size_t)m2), 0);
    assert_int_equal(topo_restart(t, (size_t)m2, false), 0);
    expect(t, (size_t)m2, "(nil)", "GET k");

    /* A sentinel killed and restarted keeps its configuration. */
    size_t s0 = topo_sentinel(t, 0);
    assert_int_equal(topo_kill(t, s0), 0);
    assert_int_equal(topo_restart(t, s0, true), 0);
    assert_int_equal(topo_sentinel_wait_new_master(t, -1, SETTLE_MS), m2);

    /* Bad calls. */
    assert_int_equal(topo_restart(t, s0, true), -1);   /* already running */
    assert_null(topo_sentinel_start(0, 0, "x"));
    assert_null(topo_sentinel_start(0, 1, "bad name"));
    t0 = now_ms();
    topo_free(t);
    fprintf(stderr, "# stopped in %lld ms\n", now_ms() - t0);
    topo_free(NULL);
}

/* ---- Cluster ---- */

static redisContext *connect_to(topo *t, size_t i)
{
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", topo_port(t, i), tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    return c;
}

/* The engine's key slot and CLUSTER KEYSLOT agree on many random keys,
 * binary ones and ones with braces included (one pipeline). */
static void keyslot_matches(topo *t)
{
    enum { KEYS = 2000 };
    static char keys[KEYS][48];
    static size_t lens[KEYS];
    const char alphabet[] = "ab{}{}{}xyz:0123456789\0\xff";
    srand(12345);
    redisContext *c = connect_to(t, 0);
    for (size_t i = 0; i < KEYS; i++) {
        lens[i] = (size_t)(rand() % 40);
        for (size_t j = 0; j < lens[i]; j++)
            keys[i][j] = i % 2 ? alphabet[rand() % (int)(sizeof alphabet - 1)] : (char)rand();
        const char *argv[] = { "CLUSTER", "KEYSLOT", keys[i] };
        size_t argl[] = { 7, 7, lens[i] };
        assert_int_equal(redisAppendCommandArgv(c, 3, argv, argl), REDIS_OK);
    }
    for (size_t i = 0; i < KEYS; i++) {
        void *reply = NULL;
        assert_int_equal(redisGetReply(c, &reply), REDIS_OK);
        redisReply *r = reply;
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        if (r->integer != rl_key_slot(keys[i], lens[i]))
            fail_msg("key %zu (%zu bytes): CLUSTER KEYSLOT %lld, rl_key_slot %d", i, lens[i],
                     r->integer, rl_key_slot(keys[i], lens[i]));
        freeReplyObject(r);
    }
    redisFree(c);
    const char *named[] = { "foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap" };
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(topo_cluster_keyslot(t, 0, named[i]),
                         rl_key_slot(named[i], strlen(named[i])));
}

/* The engine's slot map of the cluster as node asker sees it, from CLUSTER
 * SLOTS or CLUSTER SHARDS. */
static void map_of(topo *t, size_t asker, bool shards, rl_slot_map *m)
{
    redisReply *r = topo_cmd(t, asker, shards ? "CLUSTER SHARDS" : "CLUSTER SLOTS");
    assert_non_null(r);
    int rc = shards ? rl_slot_map_from_shards(m, r, "127.0.0.1")
                    : rl_slot_map_from_slots(m, r, "127.0.0.1");
    if (rc != REDLOCK_OK)
        fail_msg("%s: %s", shards ? "CLUSTER SHARDS" : "CLUSTER SLOTS", rl_errmsg());
    freeReplyObject(r);
}

/* The map says what every node says: each slot's master as
 * topo_cluster_owner sees it, and each master's replicas. */
static void map_matches(topo *t, const rl_slot_map *m)
{
    for (int s = 0; s < RL_SLOTS; s++) {
        const rl_shard *shard = rl_slot_map_shard(m, s);
        assert_non_null(shard);
        assert_string_equal(shard->master.host, "127.0.0.1");
        if (s % 97 == 0 || s == RL_SLOTS - 1)
            assert_int_equal(shard->master.port, topo_port(t, (size_t)topo_cluster_owner(t, 0, s)));
    }
    for (size_t i = 0; i < m->n_shards; i++) {
        const rl_shard *shard = &m->shards[i];
        for (size_t j = 0; j < shard->n_replicas; j++) {
            size_t k = 0;
            while (k < topo_count(t) && topo_port(t, k) != shard->replicas[j].port)
                k++;
            assert_true(k < topo_count(t));
            char *port = topo_info(t, k, "replication", "master_port");
            assert_non_null(port);
            assert_int_equal(atoi(port), shard->master.port);
            free(port);
        }
    }
}

static rl_redirect redirect_of(topo *t, size_t i, const char *key)
{
    redisReply *r = topo_cmd(t, i, "GET %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    rl_redirect rd;
    assert_int_equal(rl_redirect_parse(&rd, r->str, r->len, "127.0.0.1"), REDLOCK_OK);
    freeReplyObject(r);
    return rd;
}

static void cluster(void **state)
{
    (void)state;
    long long t0 = now_ms();
    topo *t = topo_cluster_start(3, 1);
    assert_non_null(t);
    fprintf(stderr, "# a Cluster of 3 masters and 3 replicas started in %lld ms\n",
            now_ms() - t0);
    assert_int_equal(topo_count(t), 6);
    char uri[512];
    size_t len = (size_t)snprintf(uri, sizeof uri, "redis-cluster://");
    for (size_t i = 0; i < 6; i++)
        len += (size_t)snprintf(uri + len, sizeof uri - len, "%s%s", i ? "," : "",
                                topo_addr(t, i));
    assert_string_equal(topo_uri(t), uri);
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(strlen(topo_cluster_id(t, i)), 40);
        expect_role(t, i, i < 3 ? "master" : "slave");
    }
    assert_int_equal(topo_cluster_replica_of(t, 1), 4);
    assert_int_equal(topo_cluster_wait_ok(t, SETTLE_MS), 0);

    keyslot_matches(t);

    /* The engine reads the real CLUSTER SLOTS and CLUSTER SHARDS: three
     * shards, the masters 0-2, each with its replica. */
    rl_slot_map map;
    rl_slot_map_init(&map);
    for (int shards = 0; shards < 2; shards++) {
        map_of(t, (size_t)(shards ? 4 : 1), shards, &map);
        assert_int_equal(map.n_shards, 3);
        for (size_t i = 0; i < 3; i++) {
            const rl_shard *shard = &map.shards[i];
            size_t m = 0;
            while (m < 3 && topo_port(t, m) != shard->master.port)
                m++;
            assert_true(m < 3);
            assert_string_equal(shard->master.id, topo_cluster_id(t, m));
            assert_int_equal(shard->n_replicas, 1);
            assert_int_equal(shard->replicas[0].port, topo_port(t, 3 + m));
            assert_string_equal(shard->replicas[0].id, topo_cluster_id(t, 3 + m));
        }
        map_matches(t, &map);
    }

    /* Three keys in one slot, on its master. */
    int slot = rl_key_slot("{mig}", 5);
    assert_int_equal(slot, topo_cluster_keyslot(t, 0, "{mig}a"));
    int from = topo_cluster_owner(t, 0, slot);
    assert_true(from >= 0 && from < 3);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(topo_cluster_owner(t, i, slot), from);
    size_t to = (size_t)(from + 1) % 3;
    char moved_to_from[64], moved_to_to[64], ask_to[64];
    snprintf(moved_to_from, sizeof moved_to_from, "MOVED %d %s", slot, topo_addr(t, (size_t)from));
    snprintf(moved_to_to, sizeof moved_to_to, "MOVED %d %s", slot, topo_addr(t, to));
    snprintf(ask_to, sizeof ask_to, "ASK %d %s", slot, topo_addr(t, to));
    expect(t, (size_t)from, "OK", "SET {mig}a 1");
    expect(t, (size_t)from, "OK", "SET {mig}b 2");
    expect(t, (size_t)from, "OK", "SET {mig}c 3");
    expect(t, to, moved_to_from, "GET {mig}a");

    /* Step 1: IMPORTING on to, MIGRATING on from. The keys still there are
     * served by from; a key that is not there is asked of to. */
    assert_int_equal(topo_cluster_migrate_begin(t, slot, (size_t)from, to), 0);
    expect(t, (size_t)from, "1", "GET {mig}a");
    expect(t, (size_t)from, ask_to, "GET {mig}new");
    rl_redirect rd = redirect_of(t, (size_t)from, "{mig}new");
    assert_int_equal(rd.kind, RL_REDIRECT_ASK);
    assert_int_equal(rd.slot, slot);
    assert_string_equal(rd.host, "127.0.0.1");
    assert_int_equal(rd.port, topo_port(t, to));
    rd = redirect_of(t, to, "{mig}a");
    assert_int_equal(rd.kind, RL_REDIRECT_MOVED);
    assert_int_equal(rd.port, topo_port(t, (size_t)from));
    expect(t, to, moved_to_from, "GET {mig}a");   /* to, without ASKING */

    /* Step 2: the keys move; from now asks to for them; to serves them
     * after ASKING, on the same connection. */
    assert_int_equal(topo_cluster_migrate_keys(t, slot, (size_t)from, to), 3);
    expect(t, (size_t)from, ask_to, "GET {mig}a");
    redisContext *c = connect_to(t, to);
    redisReply *r = redisCommand(c, "ASKING");
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    r = redisCommand(c, "GET {mig}b");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "2");
    freeReplyObject(r);
    redisFree(c);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(topo_cluster_owner(t, i, slot), from);   /* not yet moved */

    /* Step 3: the slot is to's, everywhere. */
    t0 = now_ms();
    assert_int_equal(topo_cluster_migrate_end(t, slot, (size_t)from, to, SETTLE_MS), 0);
    fprintf(stderr, "# every node saw the slot move in %lld ms\n", now_ms() - t0);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(topo_cluster_owner(t, i, slot), to);
    expect(t, (size_t)from, moved_to_to, "GET {mig}a");
    /* The MOVED updates the engine's old map: to is a known master. */
    rd = redirect_of(t, (size_t)from, "{mig}a");
    assert_int_equal(rd.kind, RL_REDIRECT_MOVED);
    assert_int_equal(rd.slot, slot);
    assert_int_not_equal(rl_slot_map_shard(&map, slot)->master.port, topo_port(t, to));
    assert_int_equal(rl_slot_map_moved(&map, rd.slot, rd.host, rd.port), 0);
    assert_int_equal(rl_slot_map_shard(&map, slot)->master.port, topo_port(t, to));
    map_matches(t, &map);
    expect(t, to, "1", "GET {mig}a");
    expect(t, to, "3", "GET {mig}c");
    expect(t, to, "(int) 3", "CLUSTER COUNTKEYSINSLOT %d", slot);
    expect(t, (size_t)from, "(int) 0", "CLUSTER COUNTKEYSINSLOT %d", slot);
    assert_int_equal(topo_cluster_wait_ok(t, SETTLE_MS), 0);

    /* The whole move again, back. */
    assert_int_equal(topo_cluster_migrate(t, slot, to, (size_t)from, SETTLE_MS), 0);
    expect(t, (size_t)from, "2", "GET {mig}b");
    assert_int_equal(topo_cluster_migrate(t, slot, (size_t)from, to, SETTLE_MS), 0);

    /* A failover of to's shard: its replica takes its slots, to follows. */
    int rep = topo_cluster_replica_of(t, to);
    assert_int_equal(rep, (int)(3 + to));
    assert_int_equal(topo_wait_sync(t, to, SETTLE_MS), 1);
    t0 = now_ms();
    assert_int_equal(topo_cluster_failover(t, (size_t)rep, SETTLE_MS), 0);
    fprintf(stderr, "# CLUSTER FAILOVER settled in %lld ms\n", now_ms() - t0);
    expect_role(t, (size_t)rep, "master");
    expect_role(t, to, "slave");
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(topo_cluster_owner(t, i, slot), rep);
    expect(t, (size_t)rep, "1", "GET {mig}a");
    assert_int_equal(topo_cluster_replica_of(t, (size_t)rep), (int)to);
    assert_int_equal(topo_cluster_wait_ok(t, SETTLE_MS), 0);
    /* A MOVED from the demoted master names a node the old map has as a
     * replica: a new shard, and the map must be read again. */
    rd = redirect_of(t, to, "{mig}a");
    assert_int_equal(rd.kind, RL_REDIRECT_MOVED);
    assert_int_equal(rd.port, topo_port(t, (size_t)rep));
    assert_int_equal(rl_slot_map_moved(&map, rd.slot, rd.host, rd.port), 1);
    for (int shards = 0; shards < 2; shards++) {
        map_of(t, 0, shards, &map);
        assert_int_equal(map.n_shards, 3);
        assert_int_equal(rl_slot_map_shard(&map, slot)->master.port, topo_port(t, (size_t)rep));
        assert_int_equal(rl_slot_map_shard(&map, slot)->replicas[0].port, topo_port(t, to));
        map_matches(t, &map);
    }
    rl_slot_map_free(&map);

    /* A master killed and restarted with its data rejoins as it was, before
     * the cluster-node-timeout would have its replica take over. */
    int o = topo_cluster_owner(t, 0, rl_key_slot("x", 1));
    assert_true(o >= 0);
    expect(t, (size_t)o, "OK", "SET {x}k kept");
    assert_int_equal(topo_kill(t, (size_t)o), 0);
    assert_int_equal(topo_restart(t, (size_t)o, true), 0);
    assert_int_equal(topo_cluster_wait_ok(t, SETTLE_MS), 0);
    expect_role(t, (size_t)o, "master");
    expect(t, (size_t)o, "kept", "GET {x}k");

    /* That master stops (SIGSTOP): after cluster-node-timeout its replica
     * takes over; the Cluster settles without it; back, it follows. */
    int x = rl_key_slot("x", 1), orep = topo_cluster_replica_of(t, (size_t)o);
    size_t asker = 0;
    while ((int)asker == o || (int)asker == orep)
        asker++;
    assert_true(orep >= 0);
    assert_int_equal(topo_wait_sync(t, (size_t)o, SETTLE_MS), 1);
    t0 = now_ms();
    assert_int_equal(topo_pause(t, (size_t)o), 0);
    long long deadline = now_ms() + SETTLE_MS;
    while (topo_cluster_owner(t, asker, x) != orep && now_ms() < deadline)
        sleep_ms(20);
    assert_int_equal(topo_cluster_owner(t, asker, x), orep);
    assert_int_equal(topo_cluster_wait_ok(t, SETTLE_MS), 0);
    fprintf(stderr, "# a stopped master's replica took over in %lld ms\n", now_ms() - t0);
    expect(t, (size_t)orep, "kept", "GET {x}k");
    assert_int_equal(topo_resume(t, (size_t)o), 0);
    t0 = now_ms();
    deadline = now_ms() + SETTLE_MS;
    while (topo_cluster_replica_of(t, (size_t)orep) != o && now_ms() < deadline)
        sleep_ms(20);
    assert_int_equal(topo_cluster_replica_of(t, (size_t)orep), o);
    assert_int_equal(topo_cluster_wait_ok(t, SETTLE_MS), 0);
    fprintf(stderr, "# the resumed master became a replica in %lld ms\n", now_ms() - t0);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(topo_cluster_owner(t, i, x), orep);
    topo_free(t);

    assert_null(topo_cluster_start(2, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sentinel_group),
        cmocka_unit_test(cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
