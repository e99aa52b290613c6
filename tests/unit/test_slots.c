/*
 * test_slots.c - Redis Cluster's protocol in the engine (core/engine/slots.c),
 * without Redis: key slots against the specification's vectors and values a
 * Redis 7.0 server gave (CLUSTER KEYSLOT), slot maps read from CLUSTER SLOTS
 * and CLUSTER SHARDS replies (hiredis's reader, fed RESP), MOVED and ASK
 * redirections.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "slots.h"

/* ---- RESP written by hand, read by hiredis's reader ---- */

static char resp[16384];
static size_t resp_len;

static void put(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(resp + resp_len, sizeof resp - resp_len, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof resp - resp_len);
    resp_len += (size_t)n;
}

static void arr(size_t n) { put("*%zu\r\n", n); }
static void num(long long v) { put(":%lld\r\n", v); }
static void str(const char *s) { put("$%zu\r\n%s\r\n", strlen(s), s); }

static redisReply *read_reply(void)
{
    redisReader *r = redisReaderCreate();
    assert_non_null(r);
    assert_int_equal(redisReaderFeed(r, resp, resp_len), REDIS_OK);
    void *reply = NULL;
    assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
    assert_non_null(reply);
    redisReaderFree(r);
    resp_len = 0;
    return reply;
}

/* A CLUSTER SLOTS node: [host, port, id, []] (id NULL: [host, port]). */
static void slots_node(const char *host, int port, const char *id)
{
    arr(id != NULL ? 4 : 2);
    str(host);
    num(port);
    if (id != NULL) {
        str(id);
        arr(0);
    }
}

/* ---- slots ---- */

static int slot_of(const char *key)
{
    return rl_key_slot(key, strlen(key));
}

static void crc16_vector(void **state)
{
    (void)state;
    /* The specification's check value of CRC16-CCITT (XMODEM). */
    assert_int_equal(rl_crc16("123456789", 9), 0x31C3);
    assert_int_equal(rl_crc16("", 0), 0);
}

static void key_slots(void **state)
{
    (void)state;
    /* What CLUSTER KEYSLOT said on redis-server 7.0. */
    assert_int_equal(slot_of("foo"), 12182);
    assert_int_equal(slot_of("bar"), 5061);
    assert_int_equal(slot_of("hello"), 866);
    assert_int_equal(slot_of("c"), 7365);
    assert_int_equal(slot_of("user1000"), 3443);
    assert_int_equal(slot_of("key:1"), 6657);
    assert_int_equal(slot_of("123456789"), 0x31C3 % RL_SLOTS);
    assert_int_equal(slot_of(""), 0);
    for (int i = 0; i < 1000; i++) {
        char key[32];
        snprintf(key, sizeof key, "key:%d", i);
        int s = slot_of(key);
        assert_true(s >= 0 && s < RL_SLOTS);
    }
}

static void hash_tags(void **state)
{
    (void)state;
    /* The part between the first '{' and the next '}', when not empty. */
    assert_int_equal(slot_of("{user1000}.following"), slot_of("{user1000}.followers"));
    assert_int_equal(slot_of("{user1000}.following"), slot_of("user1000"));
    /* An empty tag: the whole key is hashed. */
    assert_int_equal(slot_of("foo{}{bar}"), 8363);
    assert_int_equal(slot_of("foo{}{bar}"), rl_crc16("foo{}{bar}", 10) % RL_SLOTS);
    assert_int_not_equal(slot_of("foo{}{bar}"), slot_of("bar"));
    /* From the first '{' to the first '}' after it. */
    assert_int_equal(slot_of("foo{{bar}}zap"), 4015);
    assert_int_equal(slot_of("foo{{bar}}zap"), slot_of("{bar"));
    assert_int_equal(slot_of("foo{bar}{zap}"), slot_of("bar"));
    /* No closing brace: the whole key. */
    assert_int_equal(slot_of("foo{bar"), rl_crc16("foo{bar", 7) % RL_SLOTS);
    assert_int_equal(slot_of("}foo{"), rl_crc16("}foo{", 5) % RL_SLOTS);
    assert_int_equal(slot_of("{}"), rl_crc16("{}", 2) % RL_SLOTS);
    /* Binary keys: the length counts, not a NUL. */
    assert_int_equal(rl_key_slot("a\0b", 3), rl_crc16("a\0b", 3) % RL_SLOTS);
    assert_int_equal(rl_key_slot("x{a\0b}y", 7), rl_crc16("a\0b", 3) % RL_SLOTS);
    /* Only len bytes are read. */
    assert_int_equal(rl_key_slot("{tag}", 4), rl_crc16("{tag", 4) % RL_SLOTS);
}

/* ---- maps from CLUSTER SLOTS ---- */

#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define ID_C "cccccccccccccccccccccccccccccccccccccccc"
#define ID_R "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"

/* Three masters; A serves 0-5460 and, after a migration, 16383; B serves
 * 5461-10922 with a replica whose host is empty; C 10923-16382 with a
 * replica of unknown endpoint ('?'). */
static redisReply *three_masters(void)
{
    arr(4);
    arr(4); num(0); num(5460); slots_node("10.0.0.1", 7000, ID_A); slots_node("10.0.0.4", 7003, ID_R);
    arr(4); num(5461); num(10922); slots_node("10.0.0.2", 7001, ID_B); slots_node("", 7004, NULL);
    arr(4); num(10923); num(16382); slots_node("10.0.0.3", 7002, ID_C); slots_node("?", 7005, NULL);
    arr(3); num(16383); num(16383); slots_node("10.0.0.1", 7000, ID_A);
    return read_reply();
}

static void map_from_cluster_slots(void **state)
{
    (void)state;
    rl_slot_map m;
    rl_slot_map_init(&m);
    redisReply *r = three_masters();
    assert_int_equal(rl_slot_map_from_slots(&m, r, "10.9.9.9"), REDLOCK_OK);
    freeReplyObject(r);
    assert_int_equal(m.n_shards, 3);
    const rl_shard *a = rl_slot_map_shard(&m, 0);
    assert_non_null(a);
    assert_string_equal(a->master.host, "10.0.0.1");
    assert_int_equal(a->master.port, 7000);
    assert_string_equal(a->master.id, ID_A);
    assert_int_equal(a->n_replicas, 1);
    assert_string_equal(a->replicas[0].host, "10.0.0.4");
    assert_int_equal(a->replicas[0].port, 7003);
    assert_ptr_equal(rl_slot_map_shard(&m, 5460), a);
    assert_ptr_equal(rl_slot_map_shard(&m, 16383), a);   /* two ranges, one shard */
    const rl_shard *b = rl_slot_map_shard(&m, 5461);
    assert_string_equal(b->master.host, "10.0.0.2");
    assert_int_equal(b->n_replicas, 1);
    assert_string_equal(b->replicas[0].host, "10.9.9.9");  /* "": the connection's host */
    assert_null(b->replicas[0].id);
    const rl_shard *c = rl_slot_map_shard(&m, 16382);
    assert_string_equal(c->master.host, "10.0.0.3");
    assert_int_equal(c->n_replicas, 0);                   /* '?': left out */
    assert_ptr_equal(rl_slot_map_shard(&m, slot_of("foo")), c);
    assert_ptr_equal(rl_slot_map_shard(&m, slot_of("bar")), a);
    assert_ptr_equal(rl_slot_map_shard(&m, slot_of("{c}x")), b);   /* c: 7365 */
    assert_null(rl_slot_map_shard(&m, -1));
    assert_null(rl_slot_map_shard(&m, RL_SLOTS));
    rl_slot_map_free(&m);
    assert_int_equal(m.n_shards, 0);
    assert_null(rl_slot_map_shard(&m, 0));
    rl_slot_map_free(&m);   /* twice is fine */
}

static void map_with_unserved_slots(void **state)
{
    (void)state;
    rl_slot_map m;
    rl_slot_map_init(&m);
    arr(1);
    arr(3); num(100); num(199); slots_node("", 7000, NULL);
    redisReply *r = read_reply();
    assert_int_equal(rl_slot_map_from_slots(&m, r, "::1"), REDLOCK_OK);
    assert_int_equal(m.n_shards, 1);
    assert_null(rl_slot_map_shard(&m, 99));
    assert_string_equal(rl_slot_map_shard(&m, 100)->master.host, "::1");
    assert_null(rl_slot_map_shard(&m, 200));
    /* The empty host with no connection host to stand for. */
    assert_int_equal(rl_slot_map_from_slots(&m, r, NULL), REDLOCK_EREDIS);
    assert_non_null(strstr(rl_errmsg(), "empty"));
    assert_int_equal(m.n_shards, 0);
    freeReplyObject(r);
    rl_slot_map_free(&m);
}

/* Each bad reply fails with REDLOCK_EREDIS, a message containing why, and
 * leaves the map empty. */
static void expect_bad_slots(rl_slot_map *m, const char *why)
{
    redisReply *r = read_reply();
    assert_int_equal(rl_slot_map_from_slots(m, r, "h"), REDLOCK_EREDIS);
    if (strstr(rl_errmsg(), why) == NULL)
        fail_msg("message '%s' lacks '%s'", rl_errmsg(), why);
    assert_int_equal(m->n_shards, 0);
    for (int s = 0; s < RL_SLOTS; s++)
        assert_int_equal(m->shard_of[s], -1);
    freeReplyObject(r);
}

static void bad_cluster_slots(void **state)
{
    (void)state;
    rl_slot_map m;
    rl_slot_map_init(&m);
    put("-ERR This instance has cluster support disabled\r\n");
    expect_bad_slots(&m, "cluster support disabled");
    put("+OK\r\n");
    expect_bad_slots(&m, "not an array");
    arr(1); arr(2); num(0); num(1);
    expect_bad_slots(&m, "a range is not");
    arr(1); arr(3); num(0); num(16384); slots_node("h", 1, NULL);
    expect_bad_slots(&m, "bad slot range 0-16384");
    arr(1); arr(3); num(10); num(9); slots_node("h", 1, NULL);
    expect_bad_slots(&m, "bad slot range 10-9");
    arr(1); arr(3); num(0); num(1); slots_node("h", 0, NULL);
    expect_bad_slots(&m, "a node is not");
    arr(1); arr(3); num(0); num(1); slots_node("h", 70000, NULL);
    expect_bad_slots(&m, "a node is not");
    arr(1); arr(3); num(0); num(1); arr(1); str("h");
    expect_bad_slots(&m, "a node is not");
    arr(1); arr(3); num(0); num(1); slots_node("?", 7000, NULL);
    expect_bad_slots(&m, "no known endpoint");
    arr(2);
    arr(3); num(0); num(10); slots_node("h", 1, ID_A);
    arr(3); num(10); num(20); slots_node("h", 2, ID_B);
    expect_bad_slots(&m, "slot 10 is served by two masters");
    /* Replicas may come and go, and one could be listed twice. */
    arr(1); arr(5); num(0); num(1); slots_node("h", 1, ID_A); slots_node("r", 2, ID_R);
    slots_node("r", 2, ID_R);
    redisReply *r = read_reply();
    assert_int_equal(rl_slot_map_from_slots(&m, r, "h"), REDLOCK_OK);
    assert_int_equal(m.shards[0].n_replicas, 1);
    freeReplyObject(r);
    assert_int_equal(rl_slot_map_from_slots(&m, NULL, "h"), REDLOCK_EREDIS);
    rl_slot_map_free(&m);
}

/* ---- maps from CLUSTER SHARDS ---- */

static void shards_node(const char *id, const char *endpoint, int port, const char *role,
                        const char *health)
{
    arr(14);
    str("id"); str(id);
    str("port"); num(port);
    str("ip"); str("10.0.0.99");
    str("endpoint"); str(endpoint);
    str("role"); str(role);
    str("replication-offset"); num(42);
    str("health"); str(health);
}

static void map_from_cluster_shards(void **state)
{
    (void)state;
    rl_slot_map m;
    rl_slot_map_init(&m);
    arr(3);
    /* A failed-over shard: the old master failed, the new one online. */
    arr(4);
    str("slots"); arr(4); num(0); num(99); num(200); num(16383);
    str("nodes"); arr(3);
    shards_node(ID_A, "10.0.0.1", 7000, "master", "fail");
    shards_node(ID_R, "10.0.0.4", 7003, "master", "online");
    shards_node(ID_C, "", 7005, "replica", "online");
    arr(4);
    str("slots"); arr(2); num(100); num(199);
    str("nodes"); arr(3);
    shards_node(ID_B, "10.0.0.2", 7001, "master", "online");
    shards_node(ID_C, "10.0.0.3", 7002, "replica", "loading");
    shards_node("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "10.0.0.6", 7007, "replica", "fail");
    /* A master with no slots yet. */
    arr(4);
    str("slots"); arr(0);
    str("nodes"); arr(1);
    shards_node("dddddddddddddddddddddddddddddddddddddddd", "10.0.0.5", 7006, "master", "online");
    redisReply *r = read_reply();
    assert_int_equal(rl_slot_map_from_shards(&m, r, "10.9.9.9"), REDLOCK_OK);
    freeReplyObject(r);
    assert_int_equal(m.n_shards, 3);
    const rl_shard *a = rl_slot_map_shard(&m, 0);
    assert_string_equal(a->master.host, "10.0.0.4");   /* the online master */
    assert_int_equal(a->master.port, 7003);
    assert_int_equal(a->n_replicas, 1);
    assert_string_equal(a->replicas[0].host, "10.9.9.9");
    assert_ptr_equal(rl_slot_map_shard(&m, 16383), a);
    const rl_shard *b = rl_slot_map_shard(&m, 150);
    assert_string_equal(b->master.host, "10.0.0.2");
    assert_int_equal(b->n_replicas, 1);   /* loading counts, failed does not */
    assert_string_equal(b->replicas[0].host, "10.0.0.3");
    assert_string_equal(m.shards[2].master.host, "10.0.0.5");
    for (int s = 0; s < RL_SLOTS; s++)
        assert_true(m.shard_of[s] == 0 || m.shard_of[s] == 1);

    /* A shard whose only master failed still names it. */
    arr(1); arr(4); str("slots"); arr(2); num(0); num(16383); str("nodes"); arr(2);
    shards_node(ID_R, "10.0.0.4", 7003, "replica", "online");
    shards_node(ID_A, "10.0.0.1", 7000, "master", "fail");
    r = read_reply();
    assert_int_equal(rl_slot_map_from_shards(&m, r, "h"), REDLOCK_OK);
    freeReplyObject(r);
    assert_int_equal(m.n_shards, 1);
    assert_string_equal(rl_slot_map_shard(&m, 0)->master.id, ID_A);
    assert_int_equal(rl_slot_map_shard(&m, 0)->n_replicas, 1);

    /* Bad replies. */
    arr(1); arr(2); str("slots"); arr(1); num(0);
    r = read_reply();
    assert_int_equal(rl_slot_map_from_shards(&m, r, "h"), REDLOCK_EREDIS);
    assert_non_null(strstr(rl_errmsg(), "no slots or nodes"));
    assert_int_equal(m.n_shards, 0);
    freeReplyObject(r);
    arr(1); arr(4); str("slots"); arr(2); num(0); num(1); str("nodes"); arr(1);
    shards_node(ID_A, "h", 1, "replica", "online");
    r = read_reply();
    assert_int_equal(rl_slot_map_from_shards(&m, r, "h"), REDLOCK_EREDIS);
    assert_non_null(strstr(rl_errmsg(), "no master"));
    freeReplyObject(r);
    arr(1); arr(4); str("slots"); arr(2); num(0); num(1); str("nodes"); arr(1);
    arr(2); str("id"); str(ID_A);
    r = read_reply();
    assert_int_equal(rl_slot_map_from_shards(&m, r, "h"), REDLOCK_EREDIS);
    assert_non_null(strstr(rl_errmsg(), "no port, endpoint or role"));
    freeReplyObject(r);
    rl_slot_map_free(&m);
}

/* ---- MOVED ---- */

static void moved_updates_the_map(void **state)
{
    (void)state;
    rl_slot_map m;
    rl_slot_map_init(&m);
    redisReply *r = three_masters();
    assert_int_equal(rl_slot_map_from_slots(&m, r, "10.9.9.9"), REDLOCK_OK);
    freeReplyObject(r);
    int foo = slot_of("foo");
    /* To a known master: no new shard. */
    assert_int_equal(rl_slot_map_moved(&m, foo, "10.0.0.1", 7000), 0);
    assert_string_equal(rl_slot_map_shard(&m, foo)->master.host, "10.0.0.1");
    assert_int_equal(m.n_shards, 3);
    assert_string_equal(rl_slot_map_shard(&m, foo + 1)->master.host, "10.0.0.3");
    /* To a node no shard has as master: a new shard, and "read the map again". */
    assert_int_equal(rl_slot_map_moved(&m, foo, "10.0.0.4", 7003), 1);
    assert_int_equal(m.n_shards, 4);
    const rl_shard *s = rl_slot_map_shard(&m, foo);
    assert_string_equal(s->master.host, "10.0.0.4");
    assert_int_equal(s->master.port, 7003);
    assert_int_equal(s->n_replicas, 0);
    assert_int_equal(rl_slot_map_moved(&m, foo + 1, "10.0.0.4", 7003), 0);
    assert_ptr_equal(rl_slot_map_shard(&m, foo + 1), s);
    /* Bad arguments. */
    assert_int_equal(rl_slot_map_moved(&m, RL_SLOTS, "h", 1), REDLOCK_EINVAL);
    assert_int_equal(rl_slot_map_moved(&m, -1, "h", 1), REDLOCK_EINVAL);
    assert_int_equal(rl_slot_map_moved(&m, 0, "", 1), REDLOCK_EINVAL);
    assert_int_equal(rl_slot_map_moved(&m, 0, "h", 0), REDLOCK_EINVAL);
    assert_int_equal(m.n_shards, 4);
    /* An empty map learns from MOVED alone. */
    rl_slot_map_free(&m);
    assert_int_equal(rl_slot_map_moved(&m, 5, "h", 1), 1);
    assert_int_equal(m.n_shards, 1);
    assert_null(rl_slot_map_shard(&m, 4));
    rl_slot_map_free(&m);
}

/* ---- redirections ---- */

static rl_redirect redirect_ok(const char *err, const char *conn_host)
{
    rl_redirect rd;
    int rc = rl_redirect_parse(&rd, err, strlen(err), conn_host);
    if (rc != REDLOCK_OK)
        fail_msg("'%s': %d %s", err, rc, rl_errmsg());
    return rd;
}

static void redirect_bad(const char *err, const char *why)
{
    rl_redirect rd;
    assert_int_equal(rl_redirect_parse(&rd, err, strlen(err), "10.0.0.9"), REDLOCK_EREDIS);
    assert_int_equal(rd.kind, RL_REDIRECT_NONE);
    if (strstr(rl_errmsg(), why) == NULL)
        fail_msg("'%s': message '%s' lacks '%s'", err, rl_errmsg(), why);
}

static void redirections(void **state)
{
    (void)state;
    rl_redirect rd = redirect_ok("MOVED 3999 127.0.0.1:6381", "10.0.0.9");
    assert_int_equal(rd.kind, RL_REDIRECT_MOVED);
    assert_int_equal(rd.slot, 3999);
    assert_string_equal(rd.host, "127.0.0.1");
    assert_int_equal(rd.port, 6381);
    rd = redirect_ok("-ASK 16383 redis-3.example:7000", NULL);
    assert_int_equal(rd.kind, RL_REDIRECT_ASK);
    assert_int_equal(rd.slot, 16383);
    assert_string_equal(rd.host, "redis-3.example");
    assert_int_equal(rd.port, 7000);
    /* An empty host: the connection's. */
    rd = redirect_ok("MOVED 0 :6380", "10.0.0.9");
    assert_int_equal(rd.slot, 0);
    assert_string_equal(rd.host, "10.0.0.9");
    assert_int_equal(rd.port, 6380);
    /* IPv6, bare (the last ':' is the port's) or in brackets. */
    rd = redirect_ok("MOVED 12 ::1:7000", NULL);
    assert_string_equal(rd.host, "::1");
    assert_int_equal(rd.port, 7000);
    rd = redirect_ok("ASK 12 fe80::1:2:3:65535", NULL);
    assert_string_equal(rd.host, "fe80::1:2:3");
    assert_int_equal(rd.port, 65535);
    rd = redirect_ok("MOVED 12 [2001:db8::7]:7001", NULL);
    assert_string_equal(rd.host, "2001:db8::7");
    assert_int_equal(rd.port, 7001);
    /* Other errors are not redirections. */
    const char *others[] = { "ERR unknown command", "CROSSSLOT Keys in request don't hash to "
                             "the same slot", "TRYAGAIN Multiple keys request during rehashing "
                             "of slot", "CLUSTERDOWN The cluster is down", "MOVEDX 1 h:1",
                             "moved 1 h:1", "ASK", "" };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        rd.kind = RL_REDIRECT_MOVED;
        assert_int_equal(rl_redirect_parse(&rd, others[i], strlen(others[i]), "h"), REDLOCK_OK);
        assert_int_equal(rd.kind, RL_REDIRECT_NONE);
    }
}

static void malformed_redirections(void **state)
{
    (void)state;
    redirect_bad("MOVED x 127.0.0.1:1", "without a valid slot");
    redirect_bad("MOVED 16384 127.0.0.1:1", "without a valid slot");
    redirect_bad("MOVED -1 127.0.0.1:1", "without a valid slot");
    redirect_bad("ASK 5", "without a valid slot");
    redirect_bad("MOVED 5 127.0.0.1", "without a valid host:port");
    redirect_bad("MOVED 5 127.0.0.1:0", "without a valid host:port");
    redirect_bad("MOVED 5 127.0.0.1:65536", "without a valid host:port");
    redirect_bad("ASK 5 127.0.0.1:", "without a valid host:port");
    redirect_bad("ASK 5 127.0.0.1:12x", "without a valid host:port");
    redirect_bad("MOVED 5 ?:7000", "unusable host");
    redirect_bad("MOVED 5 a b:7000", "unusable host");
    rl_redirect rd;
    const char *empty = "MOVED 5 :7000";
    assert_int_equal(rl_redirect_parse(&rd, empty, strlen(empty), NULL), REDLOCK_EREDIS);
    assert_non_null(strstr(rl_errmsg(), "empty"));
    char longer[400];
    memset(longer, 'h', sizeof longer);
    memcpy(longer, "MOVED 5 ", 8);
    memcpy(longer + sizeof longer - 5, ":700", 4);
    longer[sizeof longer - 1] = '\0';
    assert_int_equal(rl_redirect_parse(&rd, longer, strlen(longer), NULL), REDLOCK_EREDIS);
    assert_non_null(strstr(rl_errmsg(), "too long"));
    /* Only len bytes are read. */
    const char *cut = "MOVED 5 h:70001";
    rd = redirect_ok("MOVED 5 h:7000", NULL);
    assert_int_equal(rl_redirect_parse(&rd, cut, strlen(cut) - 1, NULL), REDLOCK_OK);
    assert_int_equal(rd.port, 7000);
}

/* ---- keys by shard and by slot ---- */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_vector),
        cmocka_unit_test(key_slots),
        cmocka_unit_test(hash_tags),
        cmocka_unit_test(map_from_cluster_slots),
        cmocka_unit_test(map_with_unserved_slots),
        cmocka_unit_test(bad_cluster_slots),
        cmocka_unit_test(map_from_cluster_shards),
        cmocka_unit_test(moved_updates_the_map),
        cmocka_unit_test(redirections),
        cmocka_unit_test(malformed_redirections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
