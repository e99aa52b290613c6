/*
 * fuzz_reply.c - what a node sends, from any bytes: the bounds of replies
 * (bound.h) and hiredis's reader, then what the engine makes of every reply
 * for every command it sends.
 *
 * The first byte picks the node's kind (a master, a Sentinel group, a
 * Cluster) and how the rest, the node's bytes, is cut into reads.
 *   - A connection of that node, its handshake and an acquire queued, is
 *     fed the bytes read by read, as a driver would (rl_engine_received):
 *     the handshake's replies (INFO, the guard, ROLE, a sentinel's answers,
 *     CLUSTER SLOTS), the acquire's, replies nobody asked for.
 *   - The bytes are scanned reply by reply (rl_bound_scan), and each reply
 *     the scanner lets through is read by hiredis and classified for each
 *     command of a lock in each form it is sent in (rl_cmd_classify), as a
 *     renewal of many, a count, a fenced acquire's counters, a slot map and
 *     a redirection.
 * Checked: what the scanner lets through is exactly one reply to hiredis's
 * reader, ending where the scanner said; the reader of a connection never
 * holds more than the largest bound beside one read; every verdict is a
 * vote, a failure with a negative code and a message; a fenced yes has its
 * counters in [1, 2^53). UndefinedBehaviorSanitizer checks the arithmetic
 * on the numbers.
 */
#include <string.h>

#include <hiredis/hiredis.h>

#include "bound.h"
#include "client.h"
#include "cmd.h"
#include "conn.h"
#include "engine.h"
#include "fuzz.h"
#include "node.h"
#include "send.h"
#include "slots.h"

#define T0 100000

static const char *const uris[] = {
    "redis://127.0.0.1:6379",
    "redis-sentinel://127.0.0.1:26379#mymaster",
    "redis-cluster://127.0.0.1:7000",
};
static const size_t cuts[] = { 1, 3, 16, 1000, 65536, (size_t)-1 };

static int no_random(void *data, void *buf, size_t n)
{
    (void)data;
    memset(buf, 7, n);
    return 0;
}

static rl_keys *keys_of(size_t n, rl_lock_kind kind)
{
    rl_keys *keys = rl_keys_new(n);
    CHECK(keys != NULL);
    for (size_t i = 0; i < n; i++) {
        keys->k[i] = strdup(i == 0 ? "app:a" : i == 1 ? "app:b" : "app:c");
        CHECK(keys->k[i] != NULL);
    }
    keys->kind = kind;
    keys->permits = kind == RL_LOCK_PERMIT ? 3 : 0;
    return keys;
}

/* The bytes fed to a connection of node kind `kind`, cut every `cut`. */
static void feed_conn(int kind, size_t cut, const char *p, size_t len)
{
    rl_client *ctx;
    const char *uri = uris[kind];
    CHECK(rl_client_new(&ctx, &uri, 1) == REDLOCK_OK);
    ctx->random = no_random;
    rl_conn *c = rl_conn_new(ctx, 0);
    CHECK(c != NULL);
    rl_engine_connected(c, T0);
    rl_keys *keys = keys_of(1, RL_LOCK_PLAIN);
    rl_cmd *cmd = rl_cmd_new(RL_CMD_ACQUIRE, keys, "0123456789abcdef0123456789abcdef", 30000);
    CHECK(cmd != NULL);
    rl_cmd_send(cmd, c);   /* its entries take references of their own */
    rl_cmd_unref(cmd);
    rl_keys_unref(keys);
    const char *out;
    size_t n = rl_conn_output(c, &out);
    rl_engine_wrote(c, n, T0);
    bool alive = true;
    for (size_t at = 0; alive && at < len;) {
        size_t k = len - at < cut ? len - at : cut;
        alive = rl_engine_received(c, p + at, k, T0 + (int64_t)at);
        at += k;
        if (alive)
            CHECK(c->reader->len - c->reader->pos <= RL_REPLY_SLOTS_BYTES + RL_REPLY_FEED_MAX);
    }
    if (alive)
        rl_engine_lost(c, REDLOCK_ENOQUORUM, "the input ended", T0);
    CHECK(c->state == RL_CONN_BROKEN && c->why[0] != '\0' && c->code < 0);
    rl_conn_free(c);
    rl_client_free(ctx);
}

static void check_result(const rl_result *r)
{
    CHECK(r->vote == RL_VOTE_YES || r->vote == RL_VOTE_NO || r->vote == RL_VOTE_FAILED);
    if (r->vote == RL_VOTE_FAILED) {
        CHECK(r->code < 0);
        CHECK(memchr(r->why, '\0', sizeof r->why) != NULL && r->why[0] != '\0');
    }
}

/* 2 when the command may be fenced (as op.c sends them: a plain or write
 * lock's acquire), else 1. */
static int fenceable(rl_cmd_kind kind, rl_lock_kind lock)
{
    return kind == RL_CMD_ACQUIRE && (lock == RL_LOCK_PLAIN || lock == RL_LOCK_WRITE) ? 2 : 1;
}

/* One reply, as each command of a lock would take it. */
static void classify_all(const redisReply *reply)
{
    static const rl_cmd_kind kinds[] = { RL_CMD_ACQUIRE, RL_CMD_EXTEND, RL_CMD_RELEASE,
                                         RL_CMD_INSPECT, RL_CMD_FORCE, RL_CMD_FENCE,
                                         RL_CMD_PING };
    static const rl_lock_kind locks[] = { RL_LOCK_PLAIN, RL_LOCK_READ, RL_LOCK_WRITE,
                                          RL_LOCK_PERMIT, RL_LOCK_FAIR };
    for (size_t n = 1; n <= 3; n += 2)
        for (size_t l = 0; l < sizeof locks / sizeof locks[0]; l++) {
            rl_keys *keys = keys_of(n, locks[l]);
            for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
                for (int fenced = 0; fenced < fenceable(kinds[k], locks[l]); fenced++) {
                    rl_cmd *cmd = rl_cmd_new(kinds[k], keys, "tok", 30000);
                    CHECK(cmd != NULL);
                    cmd->fenced = fenced;
                    for (int form = 0; form < RL_FORMS; form++) {
                        rl_result r;
                        rl_cmd_classify(cmd, form, reply, &r);
                        check_result(&r);
                        if (form == RL_FORM_SET) {
                            int64_t fence = 0;
                            rl_cmd_count(reply, &r, &fence);
                            check_result(&r);
                        }
                        /* op.c reads a fenced yes's counters (but a SET's: its
                         * count's) */
                        if (r.vote == RL_VOTE_YES && fenced && form != RL_FORM_SET
                            && form != RL_FORM_COUNT) {
                            int64_t fences[3];
                            rl_cmd_fences(cmd, reply, fences);
                            for (size_t i = 0; i < n; i++)
                                CHECK(fences[i] >= 1 && fences[i] < ((int64_t)1 << 53));
                        }
                    }
                    rl_cmd_unref(cmd);
                }
            rl_cmd *many = rl_cmd_new_many(keys);
            CHECK(many != NULL);
            signed char votes[3];
            rl_result bad;
            memset(&bad, 0, sizeof bad);
            if (!rl_cmd_many_votes(many, RL_FORM_EVAL, reply, votes, &bad))
                check_result(&bad);
            rl_cmd_unref(many);
            rl_keys_unref(keys);
        }
    rl_slot_map map;
    rl_slot_map_init(&map);
    rl_slot_map_from_slots(&map, reply, "127.0.0.1");
    rl_slot_map_free(&map);
    rl_slot_map_init(&map);
    rl_slot_map_from_shards(&map, reply, "127.0.0.1");
    rl_slot_map_free(&map);
    if (reply->type == REDIS_REPLY_ERROR) {
        rl_redirect red;
        rl_redirect_parse(&red, reply->str, reply->len, "127.0.0.1");
        rl_reply_error_code(reply->str);
    }
    if (reply->type == REDIS_REPLY_STRING) {
        char id[41];
        rl_info_run_id(reply->str, reply->len, id);
        rl_info_version(reply->str, reply->len);
    }
}

/* The bytes scanned reply by reply, each one the scanner lets through read
 * by a reader of its own and classified. */
static void scan_replies(const char *p, size_t len)
{
    rl_bound b;
    rl_bound_init(&b);
    char why[160];
    for (size_t at = 0, used; at < len; at += used) {
        if (rl_bound_idle(&b))
            b.lim = (rl_reply_limits){ RL_REPLY_CMD_BYTES, RL_REPLY_INFO_ELEMS, "fuzz" };
        int r = rl_bound_scan(&b, p + at, len - at, &used, why, sizeof why);
        if (r == RL_BOUND_BAD) {
            CHECK(why[0] != '\0');
            return;
        }
        if (r == RL_BOUND_MORE)
            return;
        redisReader *reader = redisReaderCreate();
        CHECK(reader != NULL);
        CHECK(redisReaderFeed(reader, p + at, used) == REDIS_OK);
        void *reply = NULL;
        CHECK(redisReaderGetReply(reader, &reply) == REDIS_OK && reply != NULL);
        CHECK(reader->pos == reader->len);
        classify_all(reply);
        freeReplyObject(reply);
        redisReaderFree(reader);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    int kind = data[0] % 3;
    size_t cut = cuts[(data[0] / 3) % (sizeof cuts / sizeof cuts[0])];
    const char *p = (const char *)data + 1;
    feed_conn(kind, cut, p, size - 1);
    scan_replies(p, size - 1);
    return 0;
}
