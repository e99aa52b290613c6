/*
 * nodes.h - a set of local redis-server processes for the C tests.
 *
 * Each node listens on a free loopback port and on a unix socket in its own
 * directory under one mkdtemp() directory, keeps nothing on disk and is
 * stopped by nodes_free() (also at exit, and by the kernel if the test
 * process dies). The binary is $REDIS_SERVER, or redis-server on PATH; with
 * $REDIS_NO_SCRIPTING "lua" (Valkey 9.1: its Lua engine unloaded) or "acl"
 * (the default user without @scripting) the nodes run no scripts.
 *
 * Raw commands go to a node over its unix socket through hiredis' synchronous
 * API, on a fresh connection each time, so they never disturb the connections
 * of the library under test. Functions that return int give 0 on success and
 * -1 on failure, with a line on stderr saying why.
 */
#ifndef REDLOCK_TEST_NODES_H
#define REDLOCK_TEST_NODES_H

#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

typedef struct nodes nodes;

/* Starts n nodes and waits until each answers PING. With a password, every
 * node requires it (--requirepass) and raw commands send AUTH first.
 * NULL when a node could not be started. */
nodes *nodes_start(size_t n, const char *password);

/* TLS nodes: each listens on TLS only (rediss://127.0.0.1:PORT), with its
 * certificate and key, and with auth_clients requires a client certificate
 * from ca; raw commands still go over the unix socket, in the clear. */
typedef struct nodes_tls {
    const char *cert, *key, *ca;
    int auth_clients;
} nodes_tls;
nodes *nodes_start_tls(size_t n, const nodes_tls *tls);

/* Makes the TLS tests' certificates (tests/support/tls-certs.sh says which)
 * in a directory of their own, removed at exit: its path, or NULL. */
const char *nodes_certs(void);

/* Stops every node, removes the directory and frees the set. NULL is a no-op. */
void nodes_free(nodes *ns);

size_t nodes_count(const nodes *ns);
int nodes_port(const nodes *ns, size_t i);

/* "redis://127.0.0.1:PORT" (rediss:// for TLS nodes) for node i. */
const char *nodes_uri(const nodes *ns, size_t i);
/* "unix://DIR/i/redis.sock" for node i. */
const char *nodes_unix_uri(const nodes *ns, size_t i);
/* The path of node i's unix socket. */
const char *nodes_socket(const nodes *ns, size_t i);
/* The redis:// URIs of all nodes, as an array of nodes_count() strings. */
const char *const *nodes_uris(const nodes *ns);

/* Stops node i with SIGTERM (nodes_kill: SIGKILL) and reaps it. */
int nodes_stop(nodes *ns, size_t i);
int nodes_kill(nodes *ns, size_t i);
/* Starts node i again on the same port, empty. */
int nodes_restart(nodes *ns, size_t i);
/* Restarts every node that is not running, waits until each answers PING
 * (which also waits out any CLIENT PAUSE) and records the group. */
int nodes_ensure_all_up(nodes *ns);
/* Writes the group's records (redlock:members, restart_records) on every
 * node: the run_ids of the servers running now, as a deployment whose
 * clients met them all would hold. So a test starts from a group in use,
 * whatever servers earlier tests replaced empty; a test about restarts
 * without data makes its own. */
int nodes_record_group(nodes *ns);
/* The same for clients with that key_prefix. */
int nodes_record_group_for(nodes *ns, const char *key_prefix);
int nodes_is_running(const nodes *ns, size_t i);

/* CLIENT PAUSE ms ALL on node i: it accepts connections but answers nothing
 * until the pause ends. */
int nodes_pause(nodes *ns, size_t i, long ms);

/* Runs one command (redisCommand format) on node i, in database 0 or db.
 * NULL when the node cannot be reached; free the reply with freeReplyObject. */
redisReply *nodes_cmd(nodes *ns, size_t i, const char *fmt, ...);
redisReply *nodes_cmd_db(nodes *ns, size_t i, int db, const char *fmt, ...);

/* Runs one command on node i in database 0; 0 when it answered without an error. */
int nodes_exec(nodes *ns, size_t i, const char *fmt, ...);

/* Shortcuts on one key in database 0 (db for nodes_get_db). */
/* The string value of key, malloc'd, or NULL when it is missing or not a string. */
char *nodes_get(nodes *ns, size_t i, const char *key);
char *nodes_get_db(nodes *ns, size_t i, int db, const char *key);
/* 1 when key exists, 0 when not, -1 on error. */
int nodes_exists(nodes *ns, size_t i, const char *key);
int nodes_exists_db(nodes *ns, size_t i, int db, const char *key);
/* PTTL of key: milliseconds, -1 without expiry, -2 when missing, -3 on error. */
long long nodes_pttl(nodes *ns, size_t i, const char *key);
/* On how many nodes key holds exactly value. */
size_t nodes_count_value(nodes *ns, const char *key, const char *value);
/* On how many nodes key exists. */
size_t nodes_count_exists(nodes *ns, const char *key);

/* Forks and execs argv[0] (found on PATH) with its output in out (NULL:
 * /dev/null) and none of this process's other descriptors; the kernel kills
 * the child if this process dies. The child's pid, or -1. */
pid_t nodes_spawn(const char *const *argv, const char *out);

/* Monotonic milliseconds, and a sleep of ms milliseconds. */
long long now_ms(void);
void sleep_ms(long ms);

#endif /* REDLOCK_TEST_NODES_H */
