/*
 * test_hostile.c - a hostile or broken node bounded in memory and time: a
 * fake node (tests/support/hostile.h) answers the lock commands with a
 * reply that announces gigabytes, one that never ends, one that drips,
 * arrays nested a thousand deep, numbers no Redis sends; the guard script
 * with such numbers too. For each, two clients: one of two real nodes and
 * the hostile one, which takes the lock (a quorum of sound nodes is
 * enough), and one of a real node and the hostile one, which needs its
 * answer. Each call returns within its node deadline and a margin, with
 * the right outcome and a message that names the bound; the process's peak
 * resident set grows by less than PEAK_GROWTH_MB during each case (a case,
 * not the whole test: under ThreadSanitizer each client's threads keep a
 * few MB of its own, about 3 MB a case, whatever the node sent, while an
 * unbounded reply grows it by hundreds of MB).
 */
#include "helpers.h"
#include "hostile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define DEADLINE_MS 1000
#define MARGIN_MS 1000
#define PEAK_GROWTH_MB 32

typedef struct hostile_case {
    const char *name;
    hostile_mode mode, guard;
    long drip_ms;
    int alone_rc;            /* the client that needs the hostile node's answer */
    const char *alone_says;  /* a part of its message (NULL: any) */
} hostile_case;

static const hostile_case cases[] = {
    { "a bulk string of 2 GB, then bytes without end", HOSTILE_HUGE_BULK, HOSTILE_HONEST, 0,
      REDLOCK_EREDIS, "bytes (a command of a lock): a string of 2000000000 bytes" },
    { "an array of 2^31-1 values, then values without end", HOSTILE_HUGE_ARRAY,
      HOSTILE_HONEST, 0, REDLOCK_EREDIS, "over the bound of 66 values (a command of a lock)" },
    { "a status line without end, as fast as it goes", HOSTILE_ENDLESS, HOSTILE_HONEST, 0,
      REDLOCK_EREDIS, "over the bound of 1048640 bytes (a command of a lock)" },
    { "the right reply, a byte every 100 ms (within the deadline)", HOSTILE_DRIP,
      HOSTILE_HONEST, 100, REDLOCK_OK, NULL },
    { "a status line without end, a byte every 20 ms", HOSTILE_DRIP_ENDLESS, HOSTILE_HONEST,
      20, REDLOCK_ENOQUORUM, NULL },
    { "arrays nested a thousand deep", HOSTILE_NESTED, HOSTILE_HONEST, 0, REDLOCK_EREDIS,
      "nested deeper than 6" },
    { "INT64_MAX for a lock", HOSTILE_INT_MAX, HOSTILE_HONEST, 0, REDLOCK_EREDIS,
      "unexpected reply" },
    { "INT64_MIN for a lock", HOSTILE_INT_NEGATIVE, HOSTILE_HONEST, 0, REDLOCK_EREDIS,
      "unexpected reply" },
    { "a garbage integer for a lock", HOSTILE_INT_GARBAGE, HOSTILE_HONEST, 0,
      REDLOCK_EREDIS, "not a 64-bit number" },
    { "an integer past 64 bits for a lock", HOSTILE_INT_HUGE, HOSTILE_HONEST, 0,
      REDLOCK_EREDIS, "not a 64-bit number" },
    { "INT64_MAX from the guard", HOSTILE_HONEST, HOSTILE_INT_MAX, 0, REDLOCK_ENOQUORUM,
      "guard" },
    { "INT64_MIN from the guard", HOSTILE_HONEST, HOSTILE_INT_NEGATIVE, 0, REDLOCK_OK, NULL },
    { "a garbage integer from the guard", HOSTILE_HONEST, HOSTILE_INT_GARBAGE, 0,
      REDLOCK_EREDIS, "not a 64-bit number" },
    { "a 2 GB bulk string from the guard", HOSTILE_HONEST, HOSTILE_HUGE_BULK, 0,
      REDLOCK_EREDIS, "over the bound of 65536 bytes (the guard script): a string of "
                      "2000000000 bytes" },
};

typedef struct fixture {
    nodes *ns;
    hostile *h;
} fixture;

static long clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The process's peak resident set, in kB (ru_maxrss: VmHWM). */
static long peak_kb(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss : -1;
}

static redlock_ctx *client(const char *a, const char *b, const char *c)
{
    const char *uris[3] = { a, b, c };
    redlock_ctx *ctx = NULL;
    assert_rc(redlock_ctx_new(&ctx, uris, c ? 3 : 2), REDLOCK_OK);
    char deadline[16];
    snprintf(deadline, sizeof deadline, "%d", DEADLINE_MS);
    assert_rc(redlock_ctx_set_option(ctx, "node_timeout_ms", deadline), REDLOCK_OK);
    assert_rc(redlock_ctx_set_option(ctx, "connect_timeout_ms", deadline), REDLOCK_OK);
    return ctx;
}

/* One lock call: its status, how long it took, and its message. */
static int timed_lock(redlock_ctx *ctx, const char *name, long *took, char *msg, size_t len)
{
    redlock_handle *h = NULL;
    long t0 = clock_ms();
    int rc = redlock_lock(&h, ctx, name, 30000, 0);
    *took = clock_ms() - t0;
    snprintf(msg, len, "%s", rc == REDLOCK_OK ? "" : redlock_errmsg());
    if (h) {
        redlock_unlock(h);
        redlock_handle_free(h);
    }
    return rc;
}

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || !(f->ns = nodes_start(2, NULL)) || !(f->h = hostile_start()))
        return -1;
    /* A first lock with every node honest: what a client normally uses. */
    redlock_ctx *ctx = client(nodes_uri(f->ns, 0), nodes_uri(f->ns, 1), hostile_uri(f->h));
    long took;
    char msg[1024];
    if (timed_lock(ctx, "warm-up", &took, msg, sizeof msg) != REDLOCK_OK)
        return -1;
    redlock_ctx_free(ctx);
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    hostile_free(f->h);
    nodes_free(f->ns);
    free(f);
    return 0;
}

static void run_case(fixture *f, const hostile_case *hc, int i)
{
    char name[32], msg[1024];
    long took;
    long base_kb = peak_kb();
    size_t sent = hostile_sent(f->h);
    hostile_set(f->h, hc->mode, hc->guard, hc->drip_ms);

    /* Beside a quorum of sound nodes, the lock is granted. */
    snprintf(name, sizeof name, "hostile-%d", i);
    redlock_ctx *ctx = client(nodes_uri(f->ns, 0), nodes_uri(f->ns, 1), hostile_uri(f->h));
    int rc = timed_lock(ctx, name, &took, msg, sizeof msg);
    redlock_ctx_free(ctx);
    print_message("%s: beside two sound nodes: %s in %ld ms\n", hc->name,
                  redlock_strerror(rc), took);
    if (rc != REDLOCK_OK)
        fail_msg("%s: the lock beside two sound nodes failed: %s", hc->name, msg);
    assert_true(took <= DEADLINE_MS + MARGIN_MS);

    /* Needing its answer, the call ends within the deadline all the same. */
    snprintf(name, sizeof name, "hostile-alone-%d", i);
    ctx = client(nodes_uri(f->ns, 0), hostile_uri(f->h), NULL);
    /* Node 0's records name node 1, which this group lacks: they would hold
     * young node 0 back as what may have replaced it. The records met the
     * hostile node above, beside two sound nodes. */
    assert_rc(redlock_ctx_set_option(ctx, "restart_records", "0"), REDLOCK_OK);
    rc = timed_lock(ctx, name, &took, msg, sizeof msg);
    redlock_ctx_free(ctx);
    long grown_kb = peak_kb() - base_kb;
    print_message("%s: needing it: %s in %ld ms (%s); node sent %zu kB; peak RSS +%ld kB\n",
                  hc->name, redlock_strerror(rc), took, msg,
                  (hostile_sent(f->h) - sent) / 1024, grown_kb);
    if (rc != hc->alone_rc)
        fail_msg("%s: got %s, expected %s: %s", hc->name, redlock_strerror(rc),
                 redlock_strerror(hc->alone_rc), msg);
    if (hc->alone_says && !strstr(msg, hc->alone_says))
        fail_msg("%s: the message does not say \"%s\": %s", hc->name, hc->alone_says, msg);
    if (rc != REDLOCK_OK && !strstr(msg, hostile_uri(f->h) + strlen("redis://")))
        fail_msg("%s: the message does not name the node: %s", hc->name, msg);
    assert_true(took <= DEADLINE_MS + MARGIN_MS);
    if (grown_kb >= PEAK_GROWTH_MB * 1024L)
        fail_msg("%s: the peak resident set grew by %ld kB", hc->name, grown_kb);
}

static void hostile_nodes_are_bounded(void **state)
{
    fixture *f = *state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(f, &cases[i], (int)i);
    hostile_set(f->h, HOSTILE_HONEST, HOSTILE_HONEST, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hostile_nodes_are_bounded),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
