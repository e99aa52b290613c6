/*
 * simnode.h - a simulated Redis node for the deterministic simulation: an
 * in-memory keyspace that expires keys on the simulated clock, the commands
 * the library sends (SET with NX GET PX, EVAL, EVALSHA, SCRIPT LOAD and
 * FLUSH, FCALL and FUNCTION LOAD of the function library, INFO, PING, INCR,
 * and transactions) and the project's real Lua scripts, run by an embedded
 * Lua 5.4 with a redis.call for the commands the scripts use.
 */
#ifndef SIM_NODE_H
#define SIM_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct simnode simnode;
typedef struct simnode_client simnode_client;

/* A growing byte buffer. */
typedef struct simbuf {
    char *p;
    size_t len, cap;
} simbuf;

void simbuf_add(simbuf *b, const char *bytes, size_t len);
void simbuf_free(simbuf *b);

/* A node whose INFO says run_id, derived from seed. */
simnode *simnode_new(uint64_t seed);
void simnode_free(simnode *n);
/* What a restart keeps: everything (persistence); the fencing counters
 * only (persistence, and every lock key expired while it was down); nothing. */
typedef enum simnode_data { SIMNODE_KEEP, SIMNODE_KEEP_COUNTERS, SIMNODE_LOSE } simnode_data;

/* A restart: a new run_id, and the keyspace as data says. Scripts are
 * always forgotten, as by a real restart; the function library is kept
 * with all the data only. */
void simnode_restart(simnode *n, simnode_data data, uint64_t seed);
/* A failover: a replica takes the node's place, a new run_id, with the
 * keyspace as it was lag_ms before down_at (the node's clock when it went
 * down): the writes of those last lag_ms are lost (replication is
 * asynchronous), keys deleted then are back. Keys brought back so are not
 * listed by simnode_keys (they expire by their TTL; no release of theirs is
 * owed any more). */
void simnode_failover(simnode *n, int64_t lag_ms, int64_t down_at, uint64_t seed);
void simnode_flush_scripts(simnode *n);
/* Whether it holds the function library (scripts.h): FCALL of its functions
 * runs the scripts as EVAL does; without it FCALL finds no function, and
 * FUNCTION LOAD puts it there. A restart that loses the data loses it. */
void simnode_functions(simnode *n, bool loaded);
/* The node says it is Valkey 9.1 (INFO's server_name and valkey_version),
 * and runs SET ... IFEQ and DELIFEQ as Valkey does; else Redis 7.0, which
 * refuses them. */
void simnode_valkey(simnode *n, bool valkey);
/* The node runs no scripts (EVAL, EVALSHA, FCALL, SCRIPT, FUNCTION refused:
 * as Valkey 9.1 without its Lua engine when it is Valkey, else as an ACL
 * without @scripting); it takes WATCH, MULTI, EXEC, UNWATCH and DISCARD as
 * any node does (a WATCH sees a key's value and expiry). */
void simnode_scriptless(simnode *n, bool scriptless);
bool simnode_has_functions(const simnode *n);
/* A neighbour with write access forges the guard's record (scripts/guard.lua):
 * the record there with its end pushed far ahead (up to INT64_MAX), or one
 * that does not read as a record. Never a shorter guard: that would take a
 * protection away, which a neighbour who can write keys can do anyway. */
void simnode_forge_guard(simnode *n, uint64_t seed);
/* A hostile node: while on, the guard script is not run and its answer is
 * an arbitrary integer (INT64_MAX, a negative one, a huge one, a small one). */
void simnode_hostile_guard(simnode *n, bool on);

/* One client connection's request parser on the node. */
simnode_client *simnode_client_new(void);
void simnode_client_free(simnode_client *c);
/* Feeds request bytes from one connection at time now; every complete
 * command runs at once, its reply appended to out. false on a protocol
 * error (the connection is to be closed). */
bool simnode_feed(simnode *n, simnode_client *c, const char *in, size_t len, int64_t now,
                  simbuf *out);

/* The checker's view: the string value of key at now (NULL: none), the
 * value of its fencing counter (0: none), and the lock keys held (not the
 * counters, nor the guard's key, nor keys a failover brought back). */
const char *simnode_get(simnode *n, const char *key, int64_t now);
int64_t simnode_counter(simnode *n, const char *key, int64_t now);
/* The string value of the key beside key named suffix (key, a zero byte,
 * suffix: a read-write lock's "readers"), or NULL. */
const char *simnode_beside(simnode *n, const char *key, const char *suffix, int64_t now);
/* The same for key itself when suffix is NULL, with when that key expires
 * in *expires_at (rw.lua's and sem.lua's lists count from it). */
const char *simnode_list(simnode *n, const char *key, const char *suffix, int64_t now,
                         int64_t *expires_at);
size_t simnode_keys(simnode *n, int64_t now, const char **keys, const char **values,
                    size_t max);
/* Puts a key of another type (a list) for the WRONGTYPE cases. */
void simnode_put_list(simnode *n, const char *key);

#endif /* SIM_NODE_H */
