/*
 * sim.c - deterministic simulation of the Redlock engine.
 *
 * Clients drive the real engine (core/engine/op.h, engine.h) against simulated
 * nodes (simnode.c, running the real Lua scripts) over a simulated network,
 * all in one thread on one simulated clock, every choice drawn from a seed:
 * from 1 to 9 nodes (odd and even counts), message delays, writes accepted
 * in pieces, reordering between connections (never within one), connections
 * cut mid-stream, nodes that stall, go down, restart with their data or
 * (after longer than any lease) without it, fail over to a replica that lags
 * (up to 300 ms of writes lost, keys deleted then back; in the simulations
 * without fencing) while about half the clients forget the node as a client
 * that first meets it then would, SCRIPT FLUSH (with the function library
 * taken away or loaded in turn: every other node starts with it, and every
 * other client loads it where it lacks it), slow links. Every
 * clock runs at its own rate: each client's (its timeouts and validity) and
 * each node's (its keys' expiry), any two differing by less than the drift
 * allowance (drift_factor, each within half of it of the global clock, at
 * either end half the time), and now and then a holder works until its
 * validity ends, where the allowance decides. Releases owed are delivered
 * beside the client's operation, as the blocking driver's service thread
 * does. A lock of one resource is a plain lock half the time, else a
 * permit of the resource's semaphore (scripts/sem.lua; P from 1 to 3 for
 * all the clients of a simulation), a fair lock of it (scripts/fair.lua:
 * the plain lock's key) or a read-write lock's read or write lock of it
 * (scripts/rw.lua). A checker verifies, as the simulation runs and after it
 * heals:
 *   exclusion   no two holders of a resource inside their validity windows
 *               (each client's validity converted to the global clock),
 *               but for two readers;
 *   permits     no instant inside the validity of more than P permits of a
 *               semaphore;
 *   arrival order  in a quiet phase, a fair lock is taken by no client while
 *               another one waits for it that was on a quorum of the nodes'
 *               queues (had arrived, checked every AUDIT_MS) before the
 *               taker's first attempt began;
 *   outcomes    a lock reported held is on a quorum of nodes with its token
 *               (a permit: on a permit's quorum, more than P * N / (P + 1))
 *               (unless a failover during its operation lost a yes already
 *               counted),
 *               an unlock reported done leaves no quorum with it (the
 *               checker's own quorum, N / 2 + 1, not the engine's);
 *   no leftover after recovery (faults healed, every lock released, owed
 *               releases delivered) no node holds a lock key;
 *   release bound  a token given up (an acquire attempt that failed or was
 *               abandoned, a lock being released) is gone from every node
 *               that answers within RELEASE_BOUND_MS: the node deadline, one
 *               retry period of owed releases (RL_OWED_RETRY_MS) and four
 *               one-way delays of a link that is not slowed. "Answers": the
 *               node is up, not stalled, its link not slowed (nor still
 *               carrying what it took while it was), and the
 *               token's client may connect to it (its connect back-off is
 *               over); the bound runs from the latest of the give-up and the
 *               moment that became true. A down node keeps its keys (and
 *               their expiry runs); the bound starts again when it is back.
 *               Checked every AUDIT_MS, for the clients whose driver reads
 *               idle connections (half of them: one that reads a pooled
 *               connection only when it next uses it undoes a late reply
 *               there then); a reader's token counts while it is on the
 *               list of the key's readers, but not after a failover of the
 *               node since the token was made (a release rolled back: the
 *               list is one key, which later readers rewrite);
 *   events      with the event hook set (redlock_ctx_set_log), every
 *               `acquired` has its end by the end, after healing: `released`
 *               or `lost`, or the unlock's failure (the lock had expired or
 *               was lost, or too few nodes confirmed; the events have no
 *               `expired` of their own);
 *   fencing     in the simulations with fencing on (half of them), each
 *               holder of a resource has a larger fence than the one
 *               before, and a quorum's counters have reached it when the
 *               lock is reported held. A node down for longer than any
 *               lease comes back without its lock keys but with its
 *               counters (persistence); with --lose-counters it loses them
 *               too and every simulation fences: fences may then go back
 *               (the documented limit; counted, not a failure), and every
 *               other invariant must still hold.
 *   progress    in quiet phases with every node up, waiting locks succeed.
 *   guard bound no client holds a node back for longer than its guard
 *               (max_lease_ms) from now, whatever a forged guard record or
 *               a hostile node's answer to the guard script said.
 *
 *   sim [--seed N] [--ops N] [--per-sim N] [--replay SEED] [--trace]
 *       [--empty-restarts | --unsafe-restarts | --lose-counters [--no-restart-guard]
 *        | --beyond-drift] [--strict-wakes] [--valkey | --no-scripting]
 *
 * --valkey makes two nodes of three Valkey 9.1 (SET ... IFEQ, DELIFEQ): the
 * engine's native extend and release run there (cmd.c), the scripts on the
 * others. --no-scripting makes every node refuse scripts (plain.h): every
 * other one Valkey 9.1 without its Lua engine (SET IFEQ, DELIFEQ), the
 * others Redis 7.0 whose ACL has no @scripting (transactions); the
 * clients take plain locks of one resource.
 *
 * --empty-restarts adds restarts without data, quick ones (no delay), while
 * another node is up that kept its data for longer than any lease: the
 * nodes' records of each other (records.h) catch them, and every invariant
 * must hold. --unsafe-restarts lifts that condition (every node may lose its
 * data at once, or the one node): the documented limit, expected to break.
 *
 * --beyond-drift makes the clocks differ by several times the allowance:
 * exclusion is expected to break (shown, exit 0 only if it did), which
 * shows that the allowance is what keeps it. --strict-wakes drops a timer
 * the engine no longer asks for (rl_op_wake_at says none), as a driver that
 * sleeps until the engine's next wake does; by default one asked for before
 * still fires. tests/sim/mutate.sh shows that unsafe edits of the engine
 * are caught.
 *
 * Many short simulations run from seeds drawn from the master seed (random
 * unless given). A failure prints the simulation's seed, the invariant and
 * the trace's last lines; `sim --replay SEED --trace` replays it (with the
 * same mode options).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "cmd.h"
#include "engine.h"
#include "log.h"
#include "node.h"
#include "op.h"
#include "owed.h"
#include "simnode.h"
#include "token.h"

#define MAX_NODES 9
/* A client's mode when it takes a permit of the semaphore of its resource
 * (scripts/sem.lua: its own key, beside the lock's). */
#define SIM_PERMIT 3
/* ... a fair lock of it (scripts/fair.lua: its key is the plain lock's). */
#define SIM_FAIR 4
#define MAX_CLIENTS 6
#define RESOURCES 4
#define MAX_LEASE 2000
#define MAX_LEASE_TEXT "2000"
#define POOL 2
#define TRACE_LINES 200
/* The clients' drift_factor: the option's default (core/engine/options.def). */
#define DRIFT_FACTOR 0.01
/* The clients' node deadline (node_timeout_ms). */
#define NODE_TIMEOUT_MS 100
#define NODE_TIMEOUT_MS_TEXT "100"
/* How much later a delivery of owed releases that could not send one
 * tries again: RL_OWED_RETRY_MS of core/engine/owed.c. */
#define OWED_RETRY_MS 100
/* The longest one-way delay of a link that is not slowed (delay()). */
#define MAX_HOP_MS 40
/* The release bound: a token given up is gone from every node that answers
 * this long after it was given up, or after the node answers again and its
 * client may connect to it again, whichever is later. */
#define RELEASE_BOUND_MS (NODE_TIMEOUT_MS + OWED_RETRY_MS + 4 * MAX_HOP_MS)
/* How often the release bound is checked, and owed releases delivered. */
#define AUDIT_MS 10

/* ---- randomness ---- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next_u64(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t between(rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next_u64(r) % (uint64_t)(hi - lo + 1));
}

static bool chance(rng *r, double p)
{
    return (double)(next_u64(r) >> 11) / 9007199254740992.0 < p;
}


/* ---- the world ---- */

typedef enum ev_kind {
    EV_TO_NODE, EV_TO_CLIENT, EV_CONNECTED, EV_REFUSED, EV_CUT, EV_WAKE, EV_NEXT,
    EV_RESUME, EV_UP, EV_FAULT, EV_AUDIT
} ev_kind;

typedef struct event {
    int64_t t;
    uint64_t seq;
    ev_kind kind;
    void *p;
    int i;
    uint64_t gen;
    char *bytes;
    size_t len;
} event;

struct client;

typedef struct simconn {
    struct client *cl;
    int node;
    rl_conn *conn;          /* NULL once the client side is gone */
    simnode_client *nc;
    bool dead;              /* cut: everything in flight is dropped */
    bool closed;            /* closed by the client: what it sent still lands */
    int64_t to_node_at, to_client_at;
    simbuf held;            /* bytes a stalled node has not read yet */
    simbuf inbox;           /* replies for an idle pooled connection */
} simconn;

typedef struct simnode_state {
    simnode *sn;
    bool down;
    int64_t down_at;        /* its clock when it went down (a failover's) */
    uint64_t down_gen;      /* which down spell an EV_UP ends */
    int64_t stalled_until;
    int64_t extra_delay;    /* a slow link */
    double rate;            /* its clock's speed against the global clock */
    int64_t base;           /* its clock at global 0 */
    int64_t failed_over_at; /* its last failover (global ms); INT64_MIN none */
    int64_t emptied_at;     /* its last restart without data (global ms); INT64_MIN none */
} simnode_state;

typedef struct interval {
    int64_t from, to;       /* global ms */
    int client;
    bool shared;            /* a read lock's: read locks overlap one another */
    char token[33];
} interval;

/* A token: whose, and since when given up (the release bound). */
typedef struct tokrec {
    char token[RL_TOKEN_LEN + 1];
    int client;
    int64_t made;           /* global ms */
    int64_t gave_up;        /* global ms; INT64_MAX while its attempt runs or it is held */
} tokrec;

typedef struct client {
    int id;
    rl_client *ctx;
    rng rnd;
    double rate;            /* its clock's speed against the global clock */
    int64_t base;           /* its clock at global 0 */
    rl_op *op;
    int op_kind;            /* 0 lock, 1 extend, 2 unlock, 3 deliver */
    int64_t op_from;        /* when the operation began (global ms) */
    uint64_t wake_gen;
    rl_op *svc;             /* a delivery of releases owed, beside op (the
                             * blocking driver's service thread) */
    uint64_t svc_wake_gen;
    struct world *w;
    size_t live_tok;        /* its token record while live, + 1 (0: none) */
    int64_t connect_ok_since[MAX_NODES];  /* no connect back-off since (global ms) */
    char open_owner[4][RL_OWNER_LEN + 1]; /* acquired, not yet ended (events) */
    int n_open;
    redlock_handle *held;
    int res[2];             /* the resources of the lock wanted or held */
    int n_res;
    int mode;               /* of a lock of one resource: 0 plain, a read-write lock's
                             * REDLOCK_READ or REDLOCK_WRITE, SIM_PERMIT or SIM_FAIR */
    int64_t held_from;      /* global ms */
    /* A fair lock being waited for: the waiter's id, and when a quorum of
     * the nodes first listed it in their queues (INT64_MAX: not yet). */
    char waiter[RL_TOKEN_LEN + 1];
    int64_t arrived_at;
    simconn *pool[MAX_NODES][POOL];
    int pooled[MAX_NODES];
    bool drain_idle;        /* replies reach pooled connections as they come */
} client;

typedef struct world {
    rng rnd;
    uint64_t seed;
    int64_t now;
    event *heap;
    size_t n_ev, cap_ev;
    uint64_t seq;
    simnode_state nodes[MAX_NODES];
    int n_nodes;            /* 1 to MAX_NODES, from the seed */
    client clients[MAX_CLIENTS];
    int n_clients;
    simconn **conns;
    size_t n_conns, cap_conns;
    interval *done[2 * RESOURCES];   /* each resource's locks, then its semaphore's permits */
    size_t n_done[2 * RESOURCES], cap_done[2 * RESOURCES];
    int permits;            /* the semaphores' permits, 1 to 3, from the seed */
    long ops, ops_budget;
    bool healing;           /* no new faults, no new locks */
    bool quiet;             /* a fault-free phase: no new faults */
    bool unsafe_restarts;   /* restarts without data and without delay, of any node */
    bool empty_restarts;    /* the same, while another node keeps its data (records.h) */
    int64_t emptied_at;     /* the last restart without data (global ms); INT64_MIN none */
    bool fencing;           /* the clients take their locks with fencing */
    int64_t failed_over_at; /* the last failover (global ms); INT64_MIN none */
    bool strict_wakes;      /* a wake not asked for again is dropped */
    bool no_scripting;      /* every node refuses scripts: plain locks of one resource */
    bool lose_counters;     /* restarts after a long time lose the counters too */
    int64_t last_fence[RESOURCES];
    int last_fencer[RESOURCES];
    int64_t quiet_from;     /* a fault-free phase began (for progress) */
    long quiet_locks, quiet_ok;
    tokrec *toks;           /* every token a client made, in order */
    size_t n_toks, cap_toks;
    size_t *tok_table;      /* open addressing: index + 1 into toks (0: empty) */
    size_t tok_cap;
    int64_t reach_since[MAX_NODES];   /* answering since (global ms; INT64_MAX: not now) */
    int64_t delayed_until[MAX_NODES]; /* what a slowed link carries arrives until then */
    const char *failure;
    char detail[512];
    char trace[TRACE_LINES][160];
    long n_trace;
    bool keep_trace;        /* the exploration runs without; a replay with */
    bool print_trace;
} world;

static void trace(world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void trace(world *w, const char *fmt, ...)
{
    if (!w->keep_trace)
        return;
    char *line = w->trace[w->n_trace++ % TRACE_LINES];
    int at = snprintf(line, 160, "%8" PRId64 " ", w->now);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + at, (size_t)(160 - at), fmt, ap);
    va_end(ap);
    if (w->print_trace)
        puts(line);
}

static void fail(world *w, const char *invariant, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(world *w, const char *invariant, const char *fmt, ...)
{
    if (w->failure)
        return;
    va_list ap;
    w->failure = invariant;
    va_start(ap, fmt);
    vsnprintf(w->detail, sizeof w->detail, fmt, ap);
    va_end(ap);
    trace(w, "FAILED %s: %s", invariant, w->detail);
}

/* ---- tokens ---- */

static uint64_t token_hash(const char *t)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ULL;
    return h;
}

static void token_index(world *w, size_t k)
{
    size_t at = (size_t)token_hash(w->toks[k].token) & (w->tok_cap - 1);
    while (w->tok_table[at])
        at = (at + 1) & (w->tok_cap - 1);
    w->tok_table[at] = k + 1;
}

static tokrec *token_find(world *w, const char *token)
{
    if (!w->tok_cap)
        return NULL;
    size_t at = (size_t)token_hash(token) & (w->tok_cap - 1);
    for (; w->tok_table[at]; at = (at + 1) & (w->tok_cap - 1))
        if (strcmp(w->toks[w->tok_table[at] - 1].token, token) == 0)
            return &w->toks[w->tok_table[at] - 1];
    return NULL;
}

/* The client's live token is given up now: its attempt failed or was
 * abandoned, or its lock is being released. */
static void give_up(world *w, client *cl)
{
    if (!cl->live_tok)
        return;
    w->toks[cl->live_tok - 1].gave_up = w->now;
    cl->live_tok = 0;
}

/* The engine made a token for an attempt: the attempt before is given up. */
static void token_made(world *w, client *cl, const char *token)
{
    give_up(w, cl);
    if (w->n_toks == w->cap_toks) {
        w->cap_toks = w->cap_toks ? w->cap_toks * 2 : 256;
        w->toks = realloc(w->toks, w->cap_toks * sizeof *w->toks);
    }
    if (2 * (w->n_toks + 1) > w->tok_cap) {
        free(w->tok_table);
        w->tok_cap = w->tok_cap ? w->tok_cap * 2 : 1024;
        w->tok_table = calloc(w->tok_cap, sizeof *w->tok_table);
        for (size_t k = 0; k < w->n_toks; k++)
            token_index(w, k);
    }
    tokrec *rec = &w->toks[w->n_toks];
    snprintf(rec->token, sizeof rec->token, "%s", token);
    rec->client = cl->id;
    rec->made = w->now;
    rec->gave_up = INT64_MAX;
    token_index(w, w->n_toks++);
    cl->live_tok = w->n_toks;
}

/* The engine's random source for a client: its own stream from the seed.
 * A request of a token's size is a new token (op.c's new_token): noted. */
static int client_random(void *data, void *buf, size_t n)
{
    client *cl = data;
    unsigned char *out = buf;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)next_u64(&cl->rnd);
    if (n == RL_TOKEN_BYTES) {
        char token[RL_TOKEN_LEN + 1];
        rl_token_hex(token, out);
        token_made(cl->w, cl, token);
    }
    return 0;
}

/* ---- the client's events (redlock_ctx_set_log) ---- */

/* Every lock an `acquired` event tells of ends with `released` or `lost`,
 * or with the unlock's failure (the lock had expired or was lost, or too
 * few nodes confirmed): the events have no other end of a lock. */
static void on_event(void *data, int level, const char *name, const char *message)
{
    client *cl = data;
    world *w = cl->w;
    (void)level;
    trace(w, "c%d event %s %.100s", cl->id, name, message);
    char owner[RL_OWNER_LEN + 1] = "";
    const char *o = strstr(message, "owner=");
    if (o) {
        size_t len = strcspn(o + 6, " :");
        snprintf(owner, sizeof owner, "%.*s", (int)(len < RL_OWNER_LEN ? len : RL_OWNER_LEN),
                 o + 6);
    }
    if (strcmp(name, "acquired") == 0) {
        if (!owner[0])
            fail(w, "events", "c%d: acquired without an owner: %s", cl->id, message);
        for (int k = 0; k < cl->n_open; k++)
            if (strcmp(cl->open_owner[k], owner) == 0)
                fail(w, "events", "c%d: %s acquired twice without an end", cl->id, owner);
        if (cl->n_open == 4) {
            fail(w, "events", "c%d: more than 4 locks acquired and not ended", cl->id);
            return;
        }
        snprintf(cl->open_owner[cl->n_open++], RL_OWNER_LEN + 1, "%s", owner);
        return;
    }
    bool ends = strcmp(name, "released") == 0 || strcmp(name, "lost") == 0
             || strncmp(message, "op=unlock ", 10) == 0;
    for (int k = 0; k < cl->n_open && ends && owner[0]; k++) {
        if (strcmp(cl->open_owner[k], owner) == 0) {
            memcpy(cl->open_owner[k], cl->open_owner[--cl->n_open], RL_OWNER_LEN + 1);
            break;
        }
    }
}

/* ---- events ---- */

static bool earlier(const event *a, const event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void schedule(world *w, int64_t t, ev_kind kind, void *p, int i, uint64_t gen,
                     const char *bytes, size_t len)
{
    if (w->n_ev == w->cap_ev) {
        w->cap_ev = w->cap_ev ? w->cap_ev * 2 : 256;
        w->heap = realloc(w->heap, w->cap_ev * sizeof *w->heap);
    }
    event e = { .t = t, .seq = w->seq++, .kind = kind, .p = p, .i = i, .gen = gen };
    if (len > 0) {
        e.bytes = malloc(len);
        memcpy(e.bytes, bytes, len);
        e.len = len;
    }
    size_t at = w->n_ev++;
    while (at > 0 && earlier(&e, &w->heap[(at - 1) / 2])) {
        w->heap[at] = w->heap[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    w->heap[at] = e;
}

static event pop_event(world *w)
{
    event top = w->heap[0], last = w->heap[--w->n_ev];
    size_t at = 0;
    for (;;) {
        size_t c = 2 * at + 1;
        if (c >= w->n_ev)
            break;
        if (c + 1 < w->n_ev && earlier(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!earlier(&w->heap[c], &last))
            break;
        w->heap[at] = w->heap[c];
        at = c;
    }
    if (w->n_ev > 0)
        w->heap[at] = last;
    return top;
}

/* ---- clocks ---- */

static int64_t client_now(const client *cl, int64_t g)
{
    return cl->base + (int64_t)floor((double)g * cl->rate);
}

/* A node's clock at global ms g: it runs the node's key expiry. */
static int64_t node_now(const simnode_state *nd, int64_t g)
{
    return nd->base + (int64_t)floor((double)g * nd->rate);
}

/* The first global ms at which the client's clock reads c or more. */
static int64_t global_at(const client *cl, int64_t c)
{
    if (c == INT64_MAX)
        return INT64_MAX;
    int64_t g = (int64_t)ceil((double)(c - cl->base) / cl->rate);
    while (client_now(cl, g) < c)
        g++;
    while (g > 0 && client_now(cl, g - 1) >= c)
        g--;
    return g;
}

/* ---- the network ---- */

static int64_t delay(world *w, int node)
{
    int64_t d = chance(&w->rnd, 0.9) ? between(&w->rnd, 0, 2) : between(&w->rnd, 3, 40);
    return d + w->nodes[node].extra_delay;
}

/* Writes what the connection has to write, in pieces now and then. */
static void write_out(world *w, simconn *sc)
{
    const char *bytes;
    size_t len;
    while (sc->conn && (len = rl_conn_output(sc->conn, &bytes)) > 0) {
        if (len > 1 && chance(&w->rnd, 0.1))
            len = (size_t)between(&w->rnd, 1, (int64_t)len - 1);
        int64_t t = w->now + delay(w, sc->node);
        if (t < sc->to_node_at)
            t = sc->to_node_at;
        sc->to_node_at = t;
        schedule(w, t, EV_TO_NODE, sc, 0, 0, bytes, len);
        rl_engine_wrote(sc->conn, len, client_now(sc->cl, w->now));
    }
}

static simconn *new_conn(world *w, client *cl, int node)
{
    simconn *sc = calloc(1, sizeof *sc);
    sc->cl = cl;
    sc->node = node;
    sc->conn = rl_conn_new(cl->ctx, (size_t)node);
    sc->conn->io_data = sc;
    sc->nc = simnode_client_new();
    if (w->n_conns == w->cap_conns) {
        w->cap_conns = w->cap_conns ? w->cap_conns * 2 : 64;
        w->conns = realloc(w->conns, w->cap_conns * sizeof *w->conns);
    }
    w->conns[w->n_conns++] = sc;
    bool refused = w->nodes[node].down;
    schedule(w, w->now + delay(w, node), refused ? EV_REFUSED : EV_CONNECTED, sc, 0, 0, NULL, 0);
    return sc;
}

/* Frees sc's broken connection, unless an operation still has it (one it
 * let go of after its connect timed out): that one is freed when the
 * operation hands it back. */
static void free_broken(simconn *sc)
{
    if (sc->conn->op)
        return;
    rl_conn_free(sc->conn);
    sc->conn = NULL;
}

/* The client side of sc is gone: what it owed is settled, the engine's
 * connection freed. */
static void client_loses(world *w, simconn *sc, const char *why)
{
    if (!sc->conn)
        return;
    client *cl = sc->cl;
    if (sc->conn->state != RL_CONN_BROKEN || rl_conn_owed(sc->conn) > 0)
        rl_engine_lost(sc->conn, REDLOCK_ENOQUORUM, why, client_now(cl, w->now));
    free_broken(sc);
    for (int j = 0; j < cl->pooled[sc->node]; j++) {
        if (cl->pool[sc->node][j] == sc) {
            cl->pool[sc->node][j] = cl->pool[sc->node][--cl->pooled[sc->node]];
            break;
        }
    }
}

/* A fault cuts sc: nothing in flight arrives, each side learns soon. */
static void cut(world *w, simconn *sc)
{
    if (sc->dead)
        return;
    sc->dead = true;
    if (sc->conn && !sc->closed)
        schedule(w, w->now + delay(w, sc->node), EV_CUT, sc, 0, 0, NULL, 0);
}

/* ---- clients ---- */

static void pump(world *w, client *cl);

static void deliver(world *w, simconn *sc, const char *bytes, size_t len)
{
    if (!sc->conn)
        return;
    if (!rl_engine_received(sc->conn, bytes, len, client_now(sc->cl, w->now))) {
        trace(w, "c%d n%d connection broke: %s", sc->cl->id, sc->node, sc->conn->why);
        sc->closed = true;
        free_broken(sc);
        return;
    }
    write_out(w, sc);
}

static simconn *take_pooled(world *w, client *cl, int node)
{
    while (cl->pooled[node] > 0) {
        simconn *sc = cl->pool[node][--cl->pooled[node]];
        if (sc->conn && sc->conn->state == RL_CONN_OPEN)
            return sc;
        (void)w;
    }
    return NULL;
}

static void attach_all(world *w, client *cl, rl_op *op)
{
    int64_t c = client_now(cl, w->now);
    for (int i = 0; i < w->n_nodes; i++) {
        if (!rl_op_wants_conn(op, (size_t)i))
            continue;
        simconn *sc = take_pooled(w, cl, i);
        if (!sc && rl_node_connect_wait(&cl->ctx->nodes[i], c) > 0) {
            rl_op_no_conn(op, (size_t)i, REDLOCK_ENOQUORUM, "unreachable (backoff)", c);
            continue;
        }
        if (!sc)
            sc = new_conn(w, cl, i);
        rl_op_attach(op, (size_t)i, sc->conn, c);
        if (sc->inbox.len > 0) {
            simbuf in = sc->inbox;
            sc->inbox = (simbuf){ 0 };
            deliver(w, sc, in.p, in.len);
            simbuf_free(&in);
        }
        if (sc->conn)
            write_out(w, sc);
    }
}

static void record_interval(world *w, client *cl, int64_t to);
static void op_finished(world *w, client *cl);
static void check_arrival_order(world *w, const client *cl);
static void svc_finished(world *w, client *cl);

/* Drives one of the client's operations (svc: its delivery) as far as it
 * goes now. */
static void pump_one(world *w, client *cl, bool svc)
{
    rl_op *op = svc ? cl->svc : cl->op;
    if (!op)
        return;
    for (int round = 0; round < 16; round++) {
        attach_all(w, cl, op);
        rl_op_step(op, client_now(cl, w->now));
        if (rl_op_done(op)) {
            if (svc)
                svc_finished(w, cl);
            else
                op_finished(w, cl);
            return;
        }
        bool wants = false;
        for (int i = 0; i < w->n_nodes && !wants; i++)
            wants = rl_op_wants_conn(op, (size_t)i);
        if (!wants)
            break;
    }
    for (int i = 0; i < w->n_nodes; i++) {
        rl_conn *c = rl_op_conn(op, (size_t)i);
        if (c)
            write_out(w, c->io_data);
    }
    int64_t wake = global_at(cl, rl_op_wake_at(op));
    /* A wake asked for earlier stays due unless the engine asks for
     * another; with --strict-wakes an engine that asks for none gets none,
     * as a driver that polls until rl_op_wake_at (none: I/O only). */
    if (wake != INT64_MAX || w->strict_wakes) {
        uint64_t gen = svc ? ++cl->svc_wake_gen : ++cl->wake_gen;
        if (wake != INT64_MAX)
            schedule(w, wake > w->now ? wake : w->now + 1, EV_WAKE, cl, svc, gen, NULL, 0);
    }
}

static void pump(world *w, client *cl)
{
    pump_one(w, cl, false);
    pump_one(w, cl, true);
}

static void give_back(world *w, client *cl, simconn *sc)
{
    if (sc->conn->state == RL_CONN_BROKEN) {
        sc->closed = true;
        client_loses(w, sc, "broken");
        return;
    }
    if (rl_conn_poolable(sc->conn) && cl->pooled[sc->node] < POOL) {
        cl->pool[sc->node][cl->pooled[sc->node]++] = sc;
        return;
    }
    trace(w, "c%d n%d closes a connection (state %d, %zu unwritten, %zu owed)", cl->id, sc->node,
          sc->conn->state, sc->conn->out_len, rl_conn_owed(sc->conn));
    sc->closed = true;
    client_loses(w, sc, "closed by the client");
}

/* Names and keys of the client's resources. */
static void names_of(const client *cl, char names[2][16], const char *ptrs[2])
{
    for (int k = 0; k < cl->n_res; k++) {
        snprintf(names[k], 16, "r%d", cl->res[k]);
        ptrs[k] = names[k];
    }
}

static void start_op(world *w, client *cl, int kind)
{
    int64_t c = client_now(cl, w->now);
    int rc;
    cl->op_kind = kind;
    cl->op_from = w->now;
    if (kind == 0) {
        char names[2][16];
        const char *ptrs[2];
        names_of(cl, names, ptrs);
        int64_t lease = between(&cl->rnd, 50, MAX_LEASE);
        int64_t wait = chance(&cl->rnd, 0.5) ? 0 : between(&cl->rnd, 1, 1000);
        rc = cl->mode == SIM_PERMIT
           ? rl_op_acquire_permit(&cl->op, cl->ctx, ptrs[0], w->permits, lease, wait, c)
           : cl->mode == SIM_FAIR ? rl_op_lock_fair(&cl->op, cl->ctx, ptrs[0], lease, wait, c)
           : cl->mode ? rl_op_lock_rw(&cl->op, cl->ctx, ptrs[0], cl->mode, NULL, lease, wait, c)
           : rl_op_lock(&cl->op, cl->ctx, ptrs, (size_t)cl->n_res, lease, wait, c);
        trace(w, "c%d %slock r%d%s lease %" PRId64 " wait %" PRId64, cl->id,
              (const char *[]){ "", "read ", "write ", "permit ", "fair " }[cl->mode], cl->res[0],
              cl->n_res > 1 ? "+" : "", lease, wait);
        if (w->quiet_from && w->now > w->quiet_from && wait > 0)
            w->quiet_locks++;
        cl->arrived_at = INT64_MAX;
        if (rc == REDLOCK_OK)
            snprintf(cl->waiter, sizeof cl->waiter, "%s", rl_op_waiter(cl->op));
    } else if (kind == 1) {
        /* Short leases now and then: an extend that shortens the lock while
         * it is in flight is where validity is easiest to get wrong. */
        int64_t lease = chance(&cl->rnd, 0.3) ? between(&cl->rnd, 20, 150)
                                                : between(&cl->rnd, 50, MAX_LEASE);
        rc = rl_op_extend(&cl->op, cl->held, lease, c);
        trace(w, "c%d extend %" PRId64, cl->id, lease);
    } else if (kind == 2) {
        record_interval(w, cl, w->now);
        give_up(w, cl);
        rc = rl_op_unlock(&cl->op, cl->held, c);
        trace(w, "c%d unlock", cl->id);
    } else {
        rc = rl_op_deliver(&cl->op, cl->ctx, c);
    }
    if (kind != 3)
        w->ops++;
    if (rc != REDLOCK_OK) {
        cl->op = NULL;
        trace(w, "c%d refused at once: %s", cl->id, rl_errmsg());
        if (kind == 0)
            give_up(w, cl);
        if (kind == 1 && !cl->held->held)
            record_interval(w, cl, w->now);
        schedule(w, w->now + between(&cl->rnd, 0, 50), EV_NEXT, cl, 0, 0, NULL, 0);
        return;
    }
    pump(w, cl);
}

/* ---- the checker ---- */

/* The quorum, the checker's own: not the engine's rl_quorum, which it checks. */
static int sim_quorum(int n_nodes)
{
    return n_nodes / 2 + 1;
}

/* A permit's quorum (docs/kinds.md): more than permits * n / (permits + 1). */
static int sim_permit_quorum(int n_nodes, int permits)
{
    return n_nodes * permits / (permits + 1) + 1;
}

/* The permits of a semaphore: no instant inside more than w->permits of
 * the windows (new among them). The most windows overlap at the latest
 * start among them, which lies in the newest one checked: so checking at
 * each start within it, as each window is recorded, covers every instant. */
static void check_permits(world *w, int r, const interval *new)
{
    const interval *all = w->done[RESOURCES + r];
    size_t n = w->n_done[RESOURCES + r];
    for (size_t j = 0; j <= n; j++) {
        int64_t at = j < n ? all[j].from : new->from;
        if (at < new->from || at >= new->to)
            continue;
        int inside = 1;
        for (size_t k = 0; k < n; k++)
            inside += all[k].from <= at && at < all[k].to;
        if (inside > w->permits)
            fail(w, "permits", "semaphore r%d of %d permits held by %d at %" PRId64
                 " (c%d's permit [%" PRId64 ", %" PRId64 ") among them)", r, w->permits,
                 inside, at, new->client, new->from, new->to);
    }
}

/* The holder's window ends now (or at its validity end if sooner). */
static void record_interval(world *w, client *cl, int64_t to)
{
    if (!cl->held || cl->held_from < 0)
        return;
    int64_t end = global_at(cl, cl->held->expires_at);
    if (to < end)
        end = to;
    for (int k = 0; k < cl->n_res && end > cl->held_from; k++) {
        int r = cl->res[k];
        if (cl->mode == SIM_PERMIT) {
            interval mine = { .from = cl->held_from, .to = end, .client = cl->id };
            check_permits(w, r, &mine);
            r += RESOURCES;
        }
        for (size_t j = 0; j < w->n_done[r] && r < RESOURCES; j++) {
            interval *o = &w->done[r][j];
            bool shared = o->shared && cl->mode == REDLOCK_READ;
            if (o->client != cl->id && !shared && o->from < end && cl->held_from < o->to)
                fail(w, "exclusion", "r%d held by c%d%s [%" PRId64 ", %" PRId64 ") and by "
                     "c%d%s [%" PRId64 ", %" PRId64 ")", r, o->client,
                     o->shared ? " (reading)" : "", o->from, o->to, cl->id,
                     cl->mode == REDLOCK_READ ? " (reading)" : "", cl->held_from, end);
        }
        if (w->n_done[r] == w->cap_done[r]) {
            w->cap_done[r] = w->cap_done[r] ? w->cap_done[r] * 2 : 64;
            w->done[r] = realloc(w->done[r], w->cap_done[r] * sizeof(interval));
        }
        interval *iv = &w->done[r][w->n_done[r]++];
        *iv = (interval){ .from = cl->held_from, .to = end, .client = cl->id,
                          .shared = cl->mode == REDLOCK_READ };
        snprintf(iv->token, sizeof iv->token, "%s", cl->held->token);
    }
    cl->held_from = -1;
}

/* A read-write lock's key while readers share it (rw.lua). */
static const char SHARED[] = "redlock:readers";

/* The next entry " token:d" of a list of readers or permits (rw.lua's,
 * sem.lua's) whose key expires at key_ends on the node's clock: its token,
 * and when it ends there (d ms before the key). false after the last. */
static bool next_entry(const char **p, int64_t key_ends, char token[RL_TOKEN_LEN + 1],
                       int64_t *ends)
{
    long long d;
    int used;
    if (!*p || sscanf(*p, " %32[0-9a-f]:%lld%n", token, &d, &used) != 2)
        return false;
    *p += used;
    *ends = key_ends - d;
    return true;
}

/* The list of readers or permits that node i keeps for key (kind "readers":
 * the key's own value while readers share it, else the list beside it of a
 * writer's own readers; "permits": the semaphore's, after its P), from its
 * first entry, with when its key expires; NULL: none. */
static const char *entries(world *w, int i, const char *key, const char *kind, int64_t *key_ends)
{
    int64_t now = node_now(&w->nodes[i], w->now);
    simnode *sn = w->nodes[i].sn;
    if (strcmp(kind, "readers") == 0) {
        const char *v = simnode_list(sn, key, NULL, now, key_ends);
        if (v && strncmp(v, SHARED, strlen(SHARED)) == 0)
            return v + strlen(SHARED);
    }
    const char *list = simnode_list(sn, key, kind, now, key_ends);
    return list && strcmp(kind, "permits") == 0 ? strchr(list, ' ') : list;
}

/* Whether node i lists token among the live readers or permits of key
 * (kind: as for entries()). */
static bool listed(world *w, int i, const char *key, const char *kind, const char *token)
{
    int64_t now = node_now(&w->nodes[i], w->now), key_ends = 0, ends;
    char tok[RL_TOKEN_LEN + 1];
    for (const char *p = entries(w, i, key, kind, &key_ends); next_entry(&p, key_ends, tok, &ends);)
        if (strcmp(tok, token) == 0 && ends > now)
            return true;
    return false;
}

/* How many nodes hold every key of the client's lock with token (a read
 * lock: have token among the key's readers; a permit: among its permits). */
static int holding(world *w, const client *cl, const char *token)
{
    int count = 0;
    for (int i = 0; i < w->n_nodes; i++) {
        bool all = true;
        for (int k = 0; k < cl->n_res && all; k++) {
            char key[16];
            snprintf(key, sizeof key, "r%d", cl->res[k]);
            if (cl->mode == REDLOCK_READ || cl->mode == SIM_PERMIT) {
                all = listed(w, i, key, cl->mode == SIM_PERMIT ? "permits" : "readers", token);
                continue;
            }
            const char *v = simnode_get(w->nodes[i].sn, key, node_now(&w->nodes[i], w->now));
            all = v && strcmp(v, token) == 0;
        }
        count += all;
    }
    return count;
}

/* A new holder's fences: larger than its resources' last ones, and on a
 * quorum's counters already. */
static void check_fences(world *w, client *cl)
{
    int q = sim_quorum(w->n_nodes);
    for (int k = 0; k < cl->n_res; k++) {
        int r = cl->res[k];
        int64_t fence = cl->held->fences[k];
        char key[16];
        snprintf(key, sizeof key, "r%d", r);
        int reached = 0;
        for (int i = 0; i < w->n_nodes; i++)
            reached += simnode_counter(w->nodes[i].sn, key, node_now(&w->nodes[i], w->now)) >= fence;
        trace(w, "c%d fence r%d %" PRId64 " (%d nodes counted it)", cl->id, r, fence, reached);
        if (reached < q && !w->lose_counters)
            fail(w, "fencing", "c%d holds r%d with fence %" PRId64 " but only %d nodes "
                 "counted it", cl->id, r, fence, reached);
        if (fence <= w->last_fence[r])
            fail(w, "fencing", "c%d holds r%d with fence %" PRId64 ", after c%d held it with "
                 "fence %" PRId64, cl->id, r, fence, w->last_fencer[r], w->last_fence[r]);
        w->last_fence[r] = fence;
        w->last_fencer[r] = cl->id;
    }
}

/* An operation that ended: what its end queued (a failed attempt's
 * release) is written before its connections go back, as the blocking
 * driver does; then it is freed. */
static void end_op(world *w, client *cl, rl_op *op)
{
    for (int i = 0; i < w->n_nodes; i++) {
        rl_conn *c = rl_op_conn(op, (size_t)i);
        if (c)
            write_out(w, c->io_data);
    }
    rl_conn *c;
    while ((c = rl_op_take_conn(op)) != NULL)
        give_back(w, cl, c->io_data);
    rl_op_free(op);
}

static void op_finished(world *w, client *cl)
{
    rl_op *op = cl->op;
    int rc = rl_op_status(op);
    int q = cl->mode == SIM_PERMIT ? sim_permit_quorum(w->n_nodes, w->permits)
                                   : sim_quorum(w->n_nodes);
    cl->op = NULL;
    cl->wake_gen++;
    trace(w, "c%d %s -> %d %.100s", cl->id,
          (const char *[]){ "lock", "extend", "unlock", "deliver" }[cl->op_kind], rc,
          rl_op_message(op));
    if (cl->op_kind == 0 && rc != REDLOCK_OK)
        give_up(w, cl);
    if (cl->op_kind == 0 && rc == REDLOCK_OK) {
        cl->held = rl_op_take_handle(op);
        cl->held_from = w->now;
        trace(w, "c%d token %s", cl->id, cl->held->token);
        /* (A failover during the operation may have lost a yes already
         * counted: the replica never had it. Exclusion still must hold.) */
        if (holding(w, cl, cl->held->token) < q && !w->unsafe_restarts
            && w->failed_over_at < cl->op_from && w->emptied_at < cl->op_from)
            fail(w, "outcomes", "c%d holds r%d but only %d nodes have its token", cl->id,
                 cl->res[0], holding(w, cl, cl->held->token));
        if (w->fencing && cl->held->fences)   /* a read lock has none */
            check_fences(w, cl);
        if (cl->mode == SIM_FAIR)
            check_arrival_order(w, cl);
        if (w->quiet_from && w->now > w->quiet_from)
            w->quiet_ok++;
    } else if (cl->op_kind == 1 && !cl->held->held) {
        record_interval(w, cl, w->now);
    } else if (cl->op_kind == 2) {
        if (rc == REDLOCK_OK && holding(w, cl, cl->held->token) >= sim_quorum(w->n_nodes))
            fail(w, "outcomes", "c%d unlocked but a quorum still has its token", cl->id);
        rl_handle_free(cl->held);
        cl->held = NULL;
    }
    end_op(w, cl, op);
    /* Now and then a holder works until its validity runs out: whether
     * that end comes before the keys' expiry on the nodes, on their own
     * clocks, is what the drift allowance is for (exclusion checks it). */
    int64_t next = w->now + between(&cl->rnd, 0, 30);
    if (cl->held && cl->held->held && !w->quiet && !w->healing && chance(&cl->rnd, 0.15))
        next = global_at(cl, cl->held->expires_at) + between(&cl->rnd, 0, 40);
    schedule(w, next, EV_NEXT, cl, 0, 0, NULL, 0);
}

/* The client's delivery of owed releases ended: its connections go back. */
static void svc_finished(world *w, client *cl)
{
    rl_op *op = cl->svc;
    cl->svc = NULL;
    cl->svc_wake_gen++;
    trace(w, "c%d deliver -> %d %.100s", cl->id, rl_op_status(op), rl_op_message(op));
    end_op(w, cl, op);
}

/* The release bound: node i still holds token under key (its value, or
 * among its readers: reading); once its owner gave it up, no longer than
 * RELEASE_BOUND_MS after the node answers and the owner can connect. A
 * failover since the token was made may have brought back a reader its
 * release had removed (a failed attempt's release goes before the token
 * counts as given up, at the next attempt), as it brings back a plain
 * lock's key (simnode_keys leaves those out; the list of readers is one
 * key, rewritten by every reader): it waits out its lease. */
static void within_bound(world *w, int i, const char *key, const char *token, bool reading)
{
    tokrec *rec = token ? token_find(w, token) : NULL;
    if (!rec || rec->gave_up == INT64_MAX
        || (reading && w->nodes[i].failed_over_at >= rec->made))
        return;
    client *cl = &w->clients[rec->client];
    /* A driver that reads a pooled connection only when it next uses it
     * undoes a late reply there then: not bound. */
    if (!cl->drain_idle || cl->connect_ok_since[i] == INT64_MAX)
        return;
    int64_t from = rec->gave_up;
    if (w->reach_since[i] > from)
        from = w->reach_since[i];
    if (cl->connect_ok_since[i] > from)
        from = cl->connect_ok_since[i];
    /* A release by transaction (a node without scripts) is two round trips. */
    int64_t bound = RELEASE_BOUND_MS + (w->no_scripting ? 2 * MAX_HOP_MS : 0);
    if (w->now - from > bound)
        fail(w, "release bound", "n%d still holds %s = %s of c%d, given up at %" PRId64
             ", %" PRId64 " ms after it answers (bound %" PRId64 " ms)", i, key, token, cl->id,
             rec->gave_up, w->now - from, bound);
}

/* Whether a fair lock's waiting client is on a quorum of the nodes' queues
 * of its resource (fair.lua's "counter ticket:id:expiry ..."), live; the
 * first time it is, it has arrived (arrival order). */
static void note_arrival(world *w, client *cl)
{
    if (!cl->op || cl->op_kind != 0 || cl->mode != SIM_FAIR || cl->arrived_at != INT64_MAX
        || !cl->waiter[0])
        return;
    char key[16];
    snprintf(key, sizeof key, "r%d", cl->res[0]);
    int listed = 0;
    for (int i = 0; i < w->n_nodes; i++) {
        int64_t now = node_now(&w->nodes[i], w->now);
        const char *queue = simnode_beside(w->nodes[i].sn, key, "queue", now);
        const char *at = queue ? strstr(queue, cl->waiter) : NULL;
        listed += at && at[RL_TOKEN_LEN] == ':' && strtoll(at + RL_TOKEN_LEN + 1, NULL, 10) > now;
    }
    if (listed >= sim_quorum(w->n_nodes))
        cl->arrived_at = w->now;
}

/* A fair lock taken by cl in a quiet phase: no client waiting for it that
 * arrived (in that phase) before cl's first attempt. */
static void check_arrival_order(world *w, const client *cl)
{
    if (!w->quiet || !w->quiet_from)
        return;
    for (int k = 0; k < w->n_clients; k++) {
        const client *v = &w->clients[k];
        if (v != cl && v->op && v->op_kind == 0 && v->mode == SIM_FAIR
            && v->res[0] == cl->res[0] && v->arrived_at != INT64_MAX
            && v->arrived_at >= w->quiet_from && v->arrived_at < cl->op_from) {
            char key[16];
            snprintf(key, sizeof key, "r%d", cl->res[0]);
            for (int i = 0; i < w->n_nodes; i++) {
                const char *queue = simnode_beside(w->nodes[i].sn, key, "queue",
                                                   node_now(&w->nodes[i], w->now));
                trace(w, "n%d's queue of %s (at %" PRId64 " there): %s", i, key,
                      node_now(&w->nodes[i], w->now), queue ? queue : "none");
            }
            trace(w, "c%d waits as %s, c%d took it as %s", v->id, v->waiter, cl->id, cl->waiter);
            fail(w, "arrival order", "c%d took fair lock r%d (its first attempt at %" PRId64
                 ") while c%d, queued on a quorum since %" PRId64 ", waits", cl->id,
                 cl->res[0], cl->op_from, v->id, v->arrived_at);
        }
    }
}

/* Every AUDIT_MS: releases owed and due go out, as the blocking driver's
 * service thread sends them, beside whatever the client is doing; and the
 * release bound is checked. */
static void audit(world *w)
{
    for (int i = 0; i < w->n_nodes; i++) {
        simnode_state *nd = &w->nodes[i];
        bool answers = !nd->down && nd->stalled_until <= w->now && nd->extra_delay == 0
                       && w->delayed_until[i] <= w->now;
        if (!answers)
            w->reach_since[i] = INT64_MAX;
        else if (w->reach_since[i] == INT64_MAX)
            w->reach_since[i] = w->now;
    }
    for (int k = 0; k < w->n_clients; k++) {
        client *cl = &w->clients[k];
        int64_t c = client_now(cl, w->now);
        for (int i = 0; i < w->n_nodes; i++) {
            int64_t left = rl_node_guard_left(&cl->ctx->nodes[i], c);
            if (left > rl_node_guard_ms(&cl->ctx->nodes[i]))
                fail(w, "guard bound", "c%d holds n%d back for %" PRId64 " ms more, longer "
                     "than any guard (%" PRId64 ")", cl->id, i, left,
                     rl_node_guard_ms(&cl->ctx->nodes[i]));
            if (rl_node_connect_wait(&cl->ctx->nodes[i], c) > 0)
                cl->connect_ok_since[i] = INT64_MAX;
            else if (cl->connect_ok_since[i] == INT64_MAX)
                cl->connect_ok_since[i] = w->now;
        }
        if (!cl->svc && rl_owed_any(cl->ctx, SIZE_MAX) && rl_owed_at(cl->ctx, c) <= c) {
            trace(w, "c%d deliver", cl->id);
            if (rl_op_deliver(&cl->svc, cl->ctx, c) == REDLOCK_OK)
                pump_one(w, cl, true);
            else
                cl->svc = NULL;
        }
    }
    for (int k = 0; k < w->n_clients; k++)
        note_arrival(w, &w->clients[k]);
    for (int i = 0; i < w->n_nodes && !w->failure; i++) {
        if (w->reach_since[i] == INT64_MAX)
            continue;
        const char *keys[64], *values[64];
        size_t n = simnode_keys(w->nodes[i].sn, node_now(&w->nodes[i], w->now), keys, values, 64);
        for (size_t j = 0; j < n; j++) {
            if (!values[j] || strncmp(values[j], SHARED, strlen(SHARED)) != 0) {
                within_bound(w, i, keys[j], values[j], false);
                continue;
            }
            /* Read: each reader on the list of the key's readers. */
            int64_t now = node_now(&w->nodes[i], w->now), key_ends = 0, ends;
            char token[RL_TOKEN_LEN + 1];
            for (const char *p = entries(w, i, keys[j], "readers", &key_ends);
                 next_entry(&p, key_ends, token, &ends);)
                if (ends > now)
                    within_bound(w, i, keys[j], token, true);
        }
        /* Each semaphore's permits, on the one key beside its name's. */
        for (int r = 0; r < RESOURCES; r++) {
            char key[16];
            snprintf(key, sizeof key, "r%d", r);
            int64_t now = node_now(&w->nodes[i], w->now), key_ends = 0, ends;
            char token[RL_TOKEN_LEN + 1];
            for (const char *p = entries(w, i, key, "permits", &key_ends);
                 next_entry(&p, key_ends, token, &ends);)
                if (ends > now)
                    within_bound(w, i, key, token, true);
        }
    }
}

/* What a client does next. */
static void next_action(world *w, client *cl)
{
    if (cl->op)
        return;
    if (cl->held) {
        bool hold_on = chance(&cl->rnd, 0.3) && !w->healing;
        start_op(w, cl, hold_on && cl->held->held ? 1 : 2);
        return;
    }
    if (w->healing || w->ops >= w->ops_budget)
        return;
    /* Without scripts, plain locks of one resource only (the rest is refused). */
    cl->n_res = !w->no_scripting && chance(&cl->rnd, 0.25) ? 2 : 1;
    /* Of a lock of one resource: plain half the time, else a read-write
     * lock's read or write lock (a write lock and a plain lock of one name
     * are one key). */
    cl->mode = cl->n_res == 2 || w->no_scripting || chance(&cl->rnd, 0.5) ? 0
             : chance(&cl->rnd, 0.3) ? SIM_PERMIT
             : chance(&cl->rnd, 0.3) ? SIM_FAIR
             : chance(&cl->rnd, 0.6) ? REDLOCK_READ : REDLOCK_WRITE;
    cl->res[0] = (int)between(&cl->rnd, 0, RESOURCES - 1);
    cl->res[1] = (cl->res[0] + 1 + (int)between(&cl->rnd, 0, RESOURCES - 2)) % RESOURCES;
    start_op(w, cl, 0);
}

/* ---- faults ---- */

/* About half the clients forget what they knew of node n (its run_id), as a
 * client that first meets it now would: only what the nodes keep (the guard
 * on the node itself, the others' records) holds them back. */
static void forget(world *w, int n)
{
    for (int k = 0; k < w->n_clients; k++) {
        if (!chance(&w->rnd, 0.5))
            continue;
        rl_node *node = &w->clients[k].ctx->nodes[n];
        pthread_mutex_lock(&node->mu);
        node->run_id[0] = '\0';
        node->restarted_at = INT64_MIN;
        pthread_mutex_unlock(&node->mu);
        trace(w, "c%d forgets n%d", k, n);
    }
}

/* The replica of nd takes its place, lag ms behind. */
static void failover(world *w, simnode_state *nd, int64_t lag)
{
    int n = (int)(nd - w->nodes);
    simnode_failover(nd->sn, lag, nd->down_at, next_u64(&w->rnd));
    w->failed_over_at = nd->failed_over_at = w->now;
    forget(w, n);
    trace(w, "n%d failed over", n);
}

/* Whether a node other than n is up and has kept its data for longer than
 * any lease: the nodes' records of each other (records.h) catch a restart
 * without data as long as one node that recorded the server kept them. */
static bool kept_by_another(const world *w, int n)
{
    for (int j = 0; j < w->n_nodes; j++)
        if (j != n && !w->nodes[j].down
            && (w->nodes[j].emptied_at == INT64_MIN || w->now - w->nodes[j].emptied_at > 3 * MAX_LEASE))
            return true;
    return false;
}

/* Node n goes down, and comes back in back ms, with its data or empty. */
static void go_down(world *w, int n, int64_t back, bool keep)
{
    simnode_state *nd = &w->nodes[n];
    nd->down = true;
    nd->down_gen++;
    for (size_t i = 0; i < w->n_conns; i++)
        if (w->conns[i]->node == n)
            cut(w, w->conns[i]);
    schedule(w, w->now + back, EV_UP, nd, keep, nd->down_gen, NULL, 0);
    trace(w, "fault: n%d down for %" PRId64 " ms, %s", n, back, keep ? "keeps data" : "empty");
}

static void fault(world *w)
{
    if (w->healing || w->quiet)
        return;
    int n = (int)between(&w->rnd, 0, w->n_nodes - 1);
    simnode_state *nd = &w->nodes[n];
    switch (between(&w->rnd, 0, 7)) {
    case 0:   /* a stall, shorter or longer than leases */
        if (!nd->down && nd->stalled_until <= w->now) {
            nd->stalled_until = w->now + between(&w->rnd, 1, 3000);
            schedule(w, nd->stalled_until, EV_RESUME, nd, n, 0, NULL, 0);
            trace(w, "fault: n%d stalls until %" PRId64, n, nd->stalled_until);
        }
        break;
    case 1:   /* a connection cut mid-stream */
        if (w->n_conns > 0) {
            simconn *sc = w->conns[between(&w->rnd, 0, (int64_t)w->n_conns - 1)];
            if (!sc->dead && !sc->closed && sc->conn) {
                trace(w, "fault: cut c%d n%d", sc->cl->id, sc->node);
                cut(w, sc);
            }
        }
        break;
    case 2: { /* down, back with its data, or empty after longer than any lease */
        if (nd->down)
            break;
        /* With --lose-counters every long spell loses them: the point there
         * is to show what that does. */
        bool quick = w->unsafe_restarts || w->empty_restarts;
        bool keep = (chance(&w->rnd, 0.6) && !w->lose_counters) || quick;
        int64_t back = keep ? between(&w->rnd, 10, 3000) : between(&w->rnd, 2 * MAX_LEASE + 100, 3 * MAX_LEASE);
        if (quick && chance(&w->rnd, 0.5) && (w->unsafe_restarts || kept_by_another(w, n))) {
            keep = false;
            back = between(&w->rnd, 10, 500);
            nd->emptied_at = w->emptied_at = w->now;
        }
        go_down(w, n, back, keep);
        /* Now and then most of the group goes empty at once (all but one
         * node that kept its data, with --empty-restarts). */
        for (int j = 0; quick && !keep && j < w->n_nodes && chance(&w->rnd, 0.5); j++) {
            if (w->nodes[j].down || (!w->unsafe_restarts && !kept_by_another(w, j)))
                continue;
            w->nodes[j].emptied_at = w->now;
            go_down(w, j, between(&w->rnd, 10, 100), false);
        }
        break;
    }
    case 5: { /* a failover: a replica that lags takes the master's place */
        /* Not with fencing: a replica without the last INCRs makes fences
         * go back, as a restart without data does (docs/guarantees.md). */
        if (nd->down || w->fencing)
            break;
        int64_t lag = between(&w->rnd, 0, 300);
        nd->down = true;
        nd->down_gen++;
        nd->down_at = node_now(nd, w->now);
        for (size_t i = 0; i < w->n_conns; i++)
            if (w->conns[i]->node == n)
                cut(w, w->conns[i]);
        int64_t back = between(&w->rnd, 10, 500);
        schedule(w, w->now + back, EV_UP, nd, 2 + (int)lag, nd->down_gen, NULL, 0);
        trace(w, "fault: n%d fails over in %" PRId64 " ms to a replica %" PRId64 " ms behind",
              n, back, lag);
        break;
    }
    case 3:
        /* And its function library goes, or an administrator loads it, in
         * turn: scripts go both ways, and either way may fail them. */
        simnode_flush_scripts(nd->sn);
        simnode_functions(nd->sn, !simnode_has_functions(nd->sn));
        trace(w, "fault: n%d SCRIPT FLUSH, FUNCTION %s", n,
              simnode_has_functions(nd->sn) ? "LOAD" : "FLUSH");
        break;
    case 4:
        if (nd->extra_delay)   /* what it carries still comes that late */
            w->delayed_until[n] = w->now + nd->extra_delay;
        nd->extra_delay = nd->extra_delay ? 0 : between(&w->rnd, 5, 100);
        trace(w, "fault: n%d link delay %" PRId64, n, nd->extra_delay);
        break;
    case 6:   /* a neighbour forges its guard record, or it answers the guard as it likes */
        if (chance(&w->rnd, 0.5)) {
            simnode_forge_guard(nd->sn, next_u64(&w->rnd));
            trace(w, "fault: n%d guard record forged", n);
        } else {
            simnode_hostile_guard(nd->sn, true);
            trace(w, "fault: n%d answers the guard as it likes", n);
        }
        break;
    default:  /* a quiet spell */
        break;
    }
}

/* ---- the node side ---- */

static void to_node(world *w, simconn *sc, const char *bytes, size_t len)
{
    simnode_state *nd = &w->nodes[sc->node];
    if (sc->dead)
        return;
    if (nd->down) {
        cut(w, sc);
        return;
    }
    if (nd->stalled_until > w->now) {
        simbuf_add(&sc->held, bytes, len);
        return;
    }
    /* Bytes that came while the node stalled are read first, even when
     * these come the moment the stall ends, before its resume: a
     * connection never reorders. */
    simbuf all = { 0 };
    if (sc->held.len > 0) {
        simbuf_add(&sc->held, bytes, len);
        all = sc->held;
        sc->held = (simbuf){ 0 };
        bytes = all.p;
        len = all.len;
    }
    simbuf out = { 0 };
    if (!simnode_feed(nd->sn, sc->nc, bytes, len, node_now(nd, w->now), &out)) {
        cut(w, sc);
    } else if (out.len > 0 && !sc->closed) {
        int64_t t = w->now + delay(w, sc->node);
        if (t < sc->to_client_at)
            t = sc->to_client_at;
        sc->to_client_at = t;
        schedule(w, t, EV_TO_CLIENT, sc, 0, 0, out.p, out.len);
    }
    simbuf_free(&out);
    simbuf_free(&all);
}

static void resume(world *w, int n)
{
    simnode_state *nd = &w->nodes[n];
    if (nd->stalled_until > w->now)
        return;
    for (size_t i = 0; i < w->n_conns; i++) {
        simconn *sc = w->conns[i];
        if (sc->node == n && sc->held.len > 0) {
            simbuf in = sc->held;
            sc->held = (simbuf){ 0 };
            to_node(w, sc, in.p, in.len);
            simbuf_free(&in);
        }
    }
}

/* ---- one event ---- */

static void handle(world *w, event *e)
{
    simconn *sc = e->p;
    client *cl;
    switch (e->kind) {
    case EV_TO_NODE:
        to_node(w, sc, e->bytes, e->len);
        break;
    case EV_TO_CLIENT:
        if (sc->dead || !sc->conn)
            break;
        if (!sc->conn->op && !sc->cl->drain_idle) {
            simbuf_add(&sc->inbox, e->bytes, e->len);
            break;
        }
        deliver(w, sc, e->bytes, e->len);
        pump(w, sc->cl);
        break;
    case EV_CONNECTED:
        if (!sc->conn || sc->dead)
            break;
        if (w->nodes[sc->node].down) {
            cut(w, sc);
            break;
        }
        rl_engine_connected(sc->conn, client_now(sc->cl, w->now));
        write_out(w, sc);
        pump(w, sc->cl);
        break;
    case EV_REFUSED:
    case EV_CUT:
        cl = sc->cl;
        sc->dead = true;
        client_loses(w, sc, e->kind == EV_REFUSED ? "cannot connect: refused"
                                                  : "connection lost: cut");
        pump(w, cl);
        break;
    case EV_WAKE:
        cl = e->p;
        if (e->gen == (e->i ? cl->svc_wake_gen : cl->wake_gen))
            pump_one(w, cl, e->i);
        break;
    case EV_NEXT:
        next_action(w, e->p);
        break;
    case EV_RESUME:
        resume(w, e->i);
        break;
    case EV_UP: {
        simnode_state *nd = e->p;
        if (!nd->down || e->gen != nd->down_gen)
            break;   /* healed meanwhile, or an earlier spell's */
        nd->down = false;
        if (e->i >= 2) {
            failover(w, nd, e->i - 2);
            break;
        }
        simnode_restart(nd->sn, e->i ? SIMNODE_KEEP : w->fencing && !w->lose_counters
                                ? SIMNODE_KEEP_COUNTERS : SIMNODE_LOSE, next_u64(&w->rnd));
        if (!e->i && (w->empty_restarts || w->unsafe_restarts))
            forget(w, (int)(nd - w->nodes));
        trace(w, "n%d back up", (int)(nd - w->nodes));
        break;
    }
    case EV_AUDIT:
        audit(w);
        schedule(w, w->now + AUDIT_MS, EV_AUDIT, NULL, 0, 0, NULL, 0);
        break;
    case EV_FAULT:
        fault(w);
        if (!w->healing)
            schedule(w, w->now + between(&w->rnd, 1, 400), EV_FAULT, NULL, 0, 0, NULL, 0);
        break;
    }
}

/* ---- one simulation ---- */

/* How a simulation runs, besides its seed. */
typedef struct mode {
    bool unsafe;            /* --unsafe-restarts */
    bool empty;             /* --empty-restarts */
    bool valkey;            /* --valkey */
    bool lose_counters;     /* --lose-counters */
    bool no_guard;          /* --no-restart-guard */
    bool beyond_drift;      /* --beyond-drift */
    bool strict_wakes;      /* --strict-wakes */
    bool no_scripting;      /* --no-scripting */
} mode;

/* A clock's rate: 1 +- spread, at either end half the time (where the
 * allowance is tested), anywhere between otherwise. */
static double clock_rate(rng *r, double spread)
{
    double x = chance(r, 0.5) ? (chance(r, 0.5) ? 1.0 : -1.0)
                              : (double)between(r, -1000, 1000) / 1000.0;
    return 1.0 + spread * x;
}

static void world_init(world *w, uint64_t seed, long ops, const mode *m)
{
    memset(w, 0, sizeof *w);
    w->seed = seed;
    w->rnd.s = seed;
    w->ops_budget = ops;
    w->unsafe_restarts = m->unsafe;
    w->empty_restarts = m->empty;
    w->emptied_at = INT64_MIN;
    w->lose_counters = m->lose_counters;
    w->strict_wakes = m->strict_wakes;
    w->no_scripting = m->no_scripting;
    w->fencing = m->lose_counters || chance(&w->rnd, 0.5);
    w->permits = (int)between(&w->rnd, 1, 3);
    w->failed_over_at = INT64_MIN;
    w->n_nodes = (int)between(&w->rnd, 1, MAX_NODES);
    /* Every clock runs at its own rate: within the drift allowance, any two
     * differ by less than drift_factor (each is off by at most half of it);
     * with --beyond-drift, by several times more. */
    double spread = m->beyond_drift ? 4 * DRIFT_FACTOR : DRIFT_FACTOR / 2;
    const char *uris[MAX_NODES];
    char buf[MAX_NODES][32];
    for (int i = 0; i < w->n_nodes; i++) {
        w->nodes[i].sn = simnode_new(next_u64(&w->rnd));
        /* Every other node starts with the function library. */
        simnode_functions(w->nodes[i].sn, i % 2 == 0);
        /* With --valkey, two nodes of three are Valkey 9.1: a plain lock's
         * extend and release go there as SET IFEQ and DELIFEQ. */
        simnode_valkey(w->nodes[i].sn, (m->valkey && i % 3 != 2) || (m->no_scripting && i % 2 == 0));
        simnode_scriptless(w->nodes[i].sn, m->no_scripting);
        w->nodes[i].rate = clock_rate(&w->rnd, spread);
        w->nodes[i].base = between(&w->rnd, 0, 1000000);
        w->nodes[i].failed_over_at = INT64_MIN;
        w->nodes[i].emptied_at = INT64_MIN;
        snprintf(buf[i], sizeof buf[i], "redis://10.0.0.%d:6379", i + 1);
        uris[i] = buf[i];
    }
    w->n_clients = (int)between(&w->rnd, 2, MAX_CLIENTS);
    for (int k = 0; k < w->n_clients; k++) {
        client *cl = &w->clients[k];
        cl->id = k;
        cl->rnd.s = next_u64(&w->rnd);
        cl->rate = clock_rate(&w->rnd, spread);
        cl->base = between(&w->rnd, 0, 1000000);
        cl->held_from = -1;
        cl->drain_idle = chance(&w->rnd, 0.5);
        if (rl_client_new(&cl->ctx, uris, (size_t)w->n_nodes) != REDLOCK_OK) {
            fprintf(stderr, "sim: rl_client_new: %s\n", rl_errmsg());
            exit(2);
        }
        cl->w = w;
        cl->ctx->random = client_random;
        cl->ctx->random_data = cl;
        atomic_store(&cl->ctx->log.data, cl);
        atomic_store(&cl->ctx->log.min, REDLOCK_LOG_DEBUG);
        atomic_store(&cl->ctx->log.fn, on_event);
        rl_options_set(&cl->ctx->opt, "node_timeout_ms", NODE_TIMEOUT_MS_TEXT);
        rl_options_set(&cl->ctx->opt, "connect_timeout_ms", "100");
        rl_options_set(&cl->ctx->opt, "retry_delay_ms", "50");
        rl_options_set(&cl->ctx->opt, "retry_jitter_ms", "25");
        rl_options_set(&cl->ctx->opt, "max_lease_ms", MAX_LEASE_TEXT);
        char drift[32];
        snprintf(drift, sizeof drift, "%g", DRIFT_FACTOR);
        rl_options_set(&cl->ctx->opt, "drift_factor", drift);
        rl_options_set(&cl->ctx->opt, "fencing", w->fencing ? "1" : "0");
        rl_options_set(&cl->ctx->opt, "restart_guard", m->no_guard ? "0" : "1");
        /* The records (records.h) where restarts without data are made. */
        rl_options_set(&cl->ctx->opt, "restart_records", m->empty || m->unsafe ? "1" : "0");
        /* Every other client loads the library where it lacks it. */
        rl_options_set(&cl->ctx->opt, "load_functions", k % 2 ? "1" : "0");
        schedule(w, between(&w->rnd, 0, 20), EV_NEXT, cl, 0, 0, NULL, 0);
    }
    schedule(w, between(&w->rnd, 0, 200), EV_FAULT, NULL, 0, 0, NULL, 0);
    schedule(w, AUDIT_MS, EV_AUDIT, NULL, 0, 0, NULL, 0);
}

static void world_free(world *w)
{
    for (int k = 0; k < w->n_clients; k++) {
        client *cl = &w->clients[k];
        if (cl->op) {
            rl_conn *c;
            while ((c = rl_op_take_conn(cl->op)) != NULL)
                (void)c;
            rl_op_free(cl->op);
        }
        if (cl->svc) {
            rl_conn *c;
            while ((c = rl_op_take_conn(cl->svc)) != NULL)
                (void)c;
            rl_op_free(cl->svc);
        }
        rl_handle_free(cl->held);
    }
    for (size_t i = 0; i < w->n_conns; i++) {
        simconn *sc = w->conns[i];
        if (sc->conn) {
            sc->conn->op = NULL;
            rl_engine_lost(sc->conn, REDLOCK_ENOQUORUM, "end", 0);
            rl_conn_free(sc->conn);
        }
        simnode_client_free(sc->nc);
        simbuf_free(&sc->held);
        simbuf_free(&sc->inbox);
        free(sc);
    }
    for (int k = 0; k < w->n_clients; k++)
        rl_client_free(w->clients[k].ctx);
    for (size_t i = 0; i < w->n_ev; i++)
        free(w->heap[i].bytes);
    free(w->heap);
    free(w->conns);
    for (int i = 0; i < w->n_nodes; i++)
        simnode_free(w->nodes[i].sn);
    for (int r = 0; r < 2 * RESOURCES; r++)
        free(w->done[r]);
    free(w->toks);
    free(w->tok_table);
}

/* Heals every fault: nodes up with their data, stalls over, links fast. */
static void heal(world *w)
{
    w->healing = true;
    for (int i = 0; i < w->n_nodes; i++) {
        simnode_state *nd = &w->nodes[i];
        if (nd->extra_delay)
            w->delayed_until[i] = w->now + nd->extra_delay;
        nd->extra_delay = 0;
        nd->stalled_until = 0;
        simnode_hostile_guard(nd->sn, false);
        resume(w, i);
        if (nd->down) {
            nd->down = false;
            simnode_restart(nd->sn, SIMNODE_KEEP, next_u64(&w->rnd));
        }
    }
    trace(w, "healed");
}

static void run_until(world *w, int64_t until)
{
    while (w->n_ev > 0 && !w->failure && w->heap[0].t <= until) {
        event e = pop_event(w);
        w->now = e.t;
        handle(w, &e);
        free(e.bytes);
    }
    if (w->now < until)
        w->now = until;
}

static bool busy(const world *w)
{
    for (int k = 0; k < w->n_clients; k++)
        if (w->clients[k].op || w->clients[k].held || w->clients[k].svc)
            return true;
    return false;
}

/* After healing: every lock released, every owed release delivered, then
 * no node holds a lock key. */
static void check_recovery(world *w)
{
    for (int step = 0; step < 200 && busy(w) && !w->failure; step++)
        run_until(w, w->now + 100);
    for (int k = 0; k < w->n_clients && busy(w); k++) {
        client *cl = &w->clients[k];
        if (cl->op || cl->held || cl->svc)
            fail(w, "progress", "clients still busy long after healing: c%d %s%s%s", k,
                 cl->op ? "in an operation " : "", cl->held ? "holding a lock " : "",
                 cl->svc ? "delivering releases" : "");
    }
    /* Releases owed wait one node deadline; the audit delivers them. */
    for (int step = 0; step < 20 && !w->failure; step++) {
        run_until(w, w->now + 150);
        for (int k = 0; k < w->n_clients; k++)
            next_action(w, &w->clients[k]);
    }
    run_until(w, w->now + 500);
    for (int i = 0; i < w->n_nodes && !w->failure; i++) {
        const char *keys[64], *values[64];
        size_t n = simnode_keys(w->nodes[i].sn, node_now(&w->nodes[i], w->now), keys, values, 64);
        for (size_t j = 0; j < n; j++)
            fail(w, "no leftover", "n%d still holds %s = %s after recovery", i, keys[j],
                 values[j] ? values[j] : "(list)");
    }
    for (int k = 0; k < w->n_clients && !w->failure; k++)
        for (int j = 0; j < w->clients[k].n_open; j++)
            fail(w, "events", "c%d: the lock of owner %s was acquired, and no event told "
                 "that it was released, expired or lost", k, w->clients[k].open_owner[j]);
}

/* One simulation of ops operations; its failure, or NULL. Traced when
 * keep_trace (a replay): the same seed makes the same run, so exploring
 * runs untraced and replays a failure to show its trace. */
static const char *simulate(uint64_t seed, long ops, const mode *m, bool keep_trace,
                            bool print_trace, long *done, int *n_nodes)
{
    world *w = malloc(sizeof *w);
    world_init(w, seed, ops, m);
    w->keep_trace = keep_trace;
    w->print_trace = print_trace;
    while (!w->failure && w->ops < w->ops_budget && w->n_ev > 0) {
        int64_t t = w->heap[0].t;
        /* Five seconds in ten are quiet: faults stop and heal, and locks that
         * wait must then succeed (progress), once a node that restarted has
         * been noticed (after the backoff of failed connects, at most 1 s)
         * and its restart guard (the largest lease) is over. */
        bool quiet = t % 10000 >= 5000;
        if (quiet && !w->quiet) {
            heal(w);
            w->healing = false;
            w->quiet = true;
            w->quiet_from = t + 1000 + MAX_LEASE + 500;
        } else if (!quiet && w->quiet) {
            if (w->quiet_locks >= 3 && w->quiet_ok == 0) {
                for (int i = 0; i < w->n_nodes; i++) {
                    const char *keys[64], *values[64];
                    size_t n = simnode_keys(w->nodes[i].sn, node_now(&w->nodes[i], w->now), keys, values, 64);
                    for (size_t j = 0; j < n; j++)
                        trace(w, "n%d holds %s = %s", i, keys[j], values[j] ? values[j] : "-");
                }
                for (int k = 0; k < w->n_clients; k++)
                    trace(w, "c%d holds %s, op %d", k,
                          w->clients[k].held ? w->clients[k].held->token : "nothing",
                          w->clients[k].op ? w->clients[k].op_kind : -1);
                fail(w, "progress", "no lock succeeded in a quiet phase (%ld tried)",
                     w->quiet_locks);
            }
            w->quiet = false;
            w->quiet_from = 0;
            w->quiet_locks = w->quiet_ok = 0;
        }
        run_until(w, t);
    }
    if (!w->failure) {
        heal(w);
        check_recovery(w);
    }
    *done = w->ops;
    if (n_nodes)
        *n_nodes = w->n_nodes;
    const char *failure = w->failure;
    if (failure && keep_trace) {
        fprintf(stderr, "sim: FAILED seed %" PRIu64 ": %s: %s\n", seed, failure, w->detail);
        fprintf(stderr, "sim: the last events (replay: sim --replay %" PRIu64 " --trace):\n",
                seed);
        long first = w->n_trace > TRACE_LINES ? w->n_trace - TRACE_LINES : 0;
        for (long i = first; i < w->n_trace && !print_trace; i++)
            fprintf(stderr, "  %s\n", w->trace[i % TRACE_LINES]);
    }
    world_free(w);
    free(w);
    return failure;
}

#define JOBS 2

typedef struct explorer {
    pthread_mutex_t mu;
    rng seeds;
    long ops, per_sim, total, sims, broken, fences_back, exclusions;
    uint64_t first_broken;  /* the seed of a simulation that broke one */
    long by_nodes[MAX_NODES + 1];   /* simulations by their number of nodes */
    mode m;
} explorer;

/* Whether failures are what the mode is there to show. */
static bool expects_failures(const mode *m)
{
    return m->unsafe || m->lose_counters || m->beyond_drift;
}

static void *explore(void *arg)
{
    explorer *ex = arg;
    bool expected = expects_failures(&ex->m);
    for (;;) {
        pthread_mutex_lock(&ex->mu);
        bool more = ex->total < ex->ops && (expected || ex->broken == 0)
                    && !(ex->m.beyond_drift && ex->exclusions > 0);
        uint64_t seed = next_u64(&ex->seeds);
        pthread_mutex_unlock(&ex->mu);
        if (!more)
            return NULL;
        long n = 0, again;
        int n_nodes = 0;
        const char *f = simulate(seed, ex->per_sim, &ex->m, false, false, &n, &n_nodes);
        /* Shown in full: a failure that is not expected, and with
         * --lose-counters one that is not about fences. */
        bool fences = f && strcmp(f, "fencing") == 0;
        bool exclusion = f && strcmp(f, "exclusion") == 0;
        if (f && (!expected || (ex->m.lose_counters && !fences)
                  || (ex->m.beyond_drift && !exclusion)))
            simulate(seed, ex->per_sim, &ex->m, true, false, &again, NULL);
        pthread_mutex_lock(&ex->mu);
        ex->total += n;
        ex->sims++;
        ex->by_nodes[n_nodes]++;
        ex->broken += f != NULL;
        ex->fences_back += fences;
        ex->exclusions += exclusion;
        if (f && !ex->first_broken)
            ex->first_broken = seed;
        pthread_mutex_unlock(&ex->mu);
    }
}

int main(int argc, char **argv)
{
    uint64_t master = 0, replay = 0;
    bool have_master = false, have_replay = false, print_trace = false;
    mode m = { 0 };
    long ops = 1000000, per_sim = 2000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            master = strtoull(argv[++i], NULL, 10);
            have_master = true;
        } else if (strcmp(argv[i], "--replay") == 0 && i + 1 < argc) {
            replay = strtoull(argv[++i], NULL, 10);
            have_replay = true;
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
            ops = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--per-sim") == 0 && i + 1 < argc) {
            per_sim = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--trace") == 0) {
            print_trace = true;
        } else if (strcmp(argv[i], "--unsafe-restarts") == 0) {
            m.unsafe = true;
        } else if (strcmp(argv[i], "--empty-restarts") == 0) {
            m.empty = true;
        } else if (strcmp(argv[i], "--lose-counters") == 0) {
            m.lose_counters = true;
        } else if (strcmp(argv[i], "--no-restart-guard") == 0) {
            m.no_guard = true;
        } else if (strcmp(argv[i], "--beyond-drift") == 0) {
            m.beyond_drift = true;
        } else if (strcmp(argv[i], "--strict-wakes") == 0) {
            m.strict_wakes = true;
        } else if (strcmp(argv[i], "--valkey") == 0) {
            m.valkey = true;
        } else if (strcmp(argv[i], "--no-scripting") == 0) {
            m.no_scripting = true;
        } else {
            fprintf(stderr, "usage: sim [--seed N] [--ops N] [--per-sim N] [--replay SEED] "
                            "[--trace] [--empty-restarts | --unsafe-restarts | --lose-counters "
                            "[--no-restart-guard] | --beyond-drift] [--strict-wakes] [--valkey | "
                            "--no-scripting]\n");
            return 64;
        }
    }
    if (m.empty + m.unsafe + m.lose_counters + m.beyond_drift > 1) {
        fprintf(stderr, "sim: --unsafe-restarts and --lose-counters show different limits; "
                        "give one\n");
        return 64;
    }
    long done = 0;
    if (have_replay) {
        int n_nodes = 0;
        const char *f = simulate(replay, per_sim, &m, true, print_trace, &done, &n_nodes);
        printf("sim: replayed seed %" PRIu64 ": %d nodes, %ld operations, %s\n", replay,
               n_nodes, done, f ? f : "no invariant broken");
        return f ? 1 : 0;
    }
    if (!have_master) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        master = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec;
    }
    printf("sim: master seed %" PRIu64 " (sim --seed %" PRIu64 " repeats this run)\n", master,
           master);
    fflush(stdout);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Simulations are independent: two workers share them out (simulation
     * k gets the k-th seed of the master's stream, whichever worker runs it). */
    explorer ex = { .seeds = { master }, .ops = ops, .per_sim = per_sim, .m = m };
    pthread_mutex_init(&ex.mu, NULL);
    pthread_t workers[JOBS];
    for (int j = 0; j < JOBS; j++)
        pthread_create(&workers[j], NULL, explore, &ex);
    for (int j = 0; j < JOBS; j++)
        pthread_join(workers[j], NULL);
    long total = ex.total, sims = ex.sims, broken = ex.broken;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("sim: %ld operations in %ld simulations, %.1f s, master seed %" PRIu64 ": %s\n",
           total, sims, secs, master,
           !broken ? "every invariant held"
           : m.unsafe ? "invariants broken (restarts without data, as documented)"
           : m.lose_counters ? "invariants broken (counters lost in restarts, as documented)"
           : m.beyond_drift ? "invariants broken (clocks beyond the drift allowance, as expected)"
           : "FAILED");
    printf("sim: simulations by number of nodes:");
    for (int n = 1; n <= MAX_NODES; n++)
        printf(" %d: %ld%s", n, ex.by_nodes[n], n < MAX_NODES ? "," : "\n");
    if (m.unsafe && ex.first_broken)
        printf("sim: sim --unsafe-restarts --replay %" PRIu64 " --trace shows one\n",
               ex.first_broken);
    if (m.unsafe)
        printf("sim: %ld of %ld simulations broke an invariant\n", broken, sims);
    if (m.lose_counters) {
        /* Exclusion does not rest on the counters: only fencing may break.
         * How often it does is what this mode measures (it takes a node that
         * lost them, and a quorum of it and nodes that fell behind, at once:
         * tests/c/test_fence.c makes that happen on purpose). */
        printf("sim: %ld of %ld simulations saw a fence go back (restart_guard %s); %ld broke "
               "another invariant\n", ex.fences_back, sims, m.no_guard ? "off" : "on",
               broken - ex.fences_back);
        return broken == ex.fences_back ? 0 : 1;
    }
    if (m.beyond_drift) {
        /* Clocks that differ by more than the allowance: exclusion is to
         * break, which shows that the allowance is what keeps it. */
        printf("sim: %ld of %ld simulations broke an invariant with clocks beyond the drift "
               "allowance (%ld exclusion): %s\n", broken, sims, ex.exclusions,
               ex.exclusions ? "broken, as expected" : "NOT broken: expected to break");
        if (ex.first_broken)
            printf("sim: sim --beyond-drift --replay %" PRIu64 " --trace shows one\n",
                   ex.first_broken);
        return ex.exclusions > 0 && broken == ex.exclusions ? 0 : 1;
    }
    return broken && !m.unsafe ? 1 : 0;
}
