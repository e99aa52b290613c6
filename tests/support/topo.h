/*
 * topo.h - Redis topologies for the tests: a Sentinel group (a master, its
 * replicas and the sentinels that watch them) or a Redis Cluster, made of
 * local redis-server processes.
 *
 * As in nodes.h: every process listens on a free loopback port, keeps its
 * files in its own directory under one mkdtemp() directory, and is killed by
 * topo_free() (also at exit, and by the kernel if the test process dies). A
 * process counts as started once the server on its port answers with its
 * process id, so topologies of tests run at once do not mix.
 * The binaries are $REDIS_SERVER and $REDIS_CLI, or redis-server and
 * redis-cli on PATH. With TOPO_KEEP=1 the directory (configs, logs) is kept
 * when the processes stop, and its path printed.
 *
 * The processes of a topology are numbered 0..topo_count()-1: a Sentinel
 * group's servers first (0 is the first master, then its replicas), then its
 * sentinels (topo_sentinel(t, j) is the number of sentinel j); a Cluster's
 * nodes are the masters 0..n_masters-1, then the replicas (replica r of
 * master m is n_masters + m * replicas_per_master + r). Roles change with
 * failovers; the numbers do not.
 *
 * Servers keep their data on disk (an append-only file written on every
 * command, fsync always), so a server killed and restarted with its data has
 * every write it acknowledged; each runs from a config file of its own, so
 * the roles Sentinel rewrites (CONFIG REWRITE) survive a restart too.
 *
 * Timings are short, so that failovers take a second or two:
 *   Sentinel: down-after-milliseconds 1000, failover-timeout 3000, and the
 *   periods of Redis 7's SENTINEL DEBUG lowered (INFO and hello messages
 *   every 500 ms instead of 10 s and 2 s), so a demoted master is turned
 *   into a replica within about 3 s rather than 10 to 20 s; PING every
 *   100 ms instead of 1 s: Sentinel counts a server's downtime from its last
 *   answer, so with a 1 s period a server killed and restarted at once could
 *   already count as down; and the sentinels ask each other (the master's
 *   state, their votes) every 100 ms instead of 1 s, so two rarely run for
 *   leader at once (a split vote is retried after 2 x failover-timeout). A
 *   server back within about 800 ms is not failed over; one stopped or down
 *   for 1 s or more is (a forced or automatic failover settles in about 3 s
 *   here);
 *   Cluster: cluster-node-timeout 2000, cluster-allow-replica-migration no
 *   (a master emptied by migrations stays a master with its replicas), and
 *   repl-ping-replica-period 1: Redis 7.0 leaves a replica out of CLUSTER
 *   SLOTS (and calls it "loading" in CLUSTER SHARDS) while its replication
 *   offset is 0, and the master's pings move the offset.
 * Replication starts at once (repl-diskless-sync-delay 0).
 *
 * Raw commands go over a fresh TCP connection each time (hiredis' blocking
 * API, 10 s timeout). Functions that return int give 0 (or the number asked
 * for) on success and -1 on failure, with a line on stderr saying why.
 */
#ifndef REDLOCK_TEST_TOPO_H
#define REDLOCK_TEST_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

typedef struct topo topo;

/* ---- Sentinel groups ---- */

/* Starts a master, k_replicas replicas of it and k_sentinels sentinels that
 * monitor it under name (quorum: a majority of the sentinels), and waits
 * until every sentinel names that master, knows every replica and every
 * other sentinel, and every replica is in sync. NULL on failure. */
topo *topo_sentinel_start(size_t k_replicas, size_t k_sentinels, const char *name);

/* The number of sentinel j. */
size_t topo_sentinel(const topo *t, size_t j);

/* The server every running sentinel names as the master now, or -1 when
 * they do not all name the same one (or a server that is not ours). */
int topo_sentinel_master(topo *t);

/* "127.0.0.1:PORT" of the server every sentinel names as master, or NULL;
 * valid until the next call on t. */
const char *topo_master_addr(topo *t);

/* SENTINEL FAILOVER (retried while a sentinel answers that it cannot yet:
 * a failover in progress, no good replica), then topo_sentinel_wait_new_master.
 * The new master's number, or -1. */
int topo_sentinel_failover(topo *t, long timeout_ms);

/* Waits until every running sentinel names one master other than old, that
 * server says it is a master, and every other running server (old
 * included, if it runs) is its replica and in sync. Servers and sentinels
 * stopped with topo_pause are not asked. The new master's number, or -1. */
int topo_sentinel_wait_new_master(topo *t, int old, long timeout_ms);

/* ---- Clusters ---- */

/* Starts n_masters (at least 3, as redis-cli --cluster create requires)
 * cluster-enabled servers and replicas_per_master more, creates the Cluster
 * of the masters with redis-cli, makes each replica replicate its master
 * (CLUSTER MEET, CLUSTER REPLICATE), and waits until the Cluster is settled
 * (topo_cluster_wait_ok) with each server in the role it was started for.
 * NULL on failure. */
topo *topo_cluster_start(size_t n_masters, size_t replicas_per_master);

/* Node i's cluster id (40 hex digits). */
const char *topo_cluster_id(const topo *t, size_t i);

/* The master that serves slot as node asker sees it (CLUSTER SLOTS), or -1. */
int topo_cluster_owner(topo *t, size_t asker, int slot);

/* CLUSTER KEYSLOT key on node i, or -1. */
int topo_cluster_keyslot(topo *t, size_t i, const char *key);

/* A slot moved from master from to master to, step by step (the Cluster
 * specification's resharding):
 *   begin: CLUSTER SETSLOT slot IMPORTING on to, then MIGRATING on from;
 *   keys:  every key of the slot MIGRATEd from from to to, in batches;
 *          the number of keys moved, or -1;
 *   end:   CLUSTER SETSLOT slot NODE to on to, then on from, then on the
 *          other masters, and waits until the Cluster is settled with to
 *          serving it.
 * topo_cluster_migrate does the three. */
int topo_cluster_migrate_begin(topo *t, int slot, size_t from, size_t to);
int topo_cluster_migrate_keys(topo *t, int slot, size_t from, size_t to);
int topo_cluster_migrate_end(topo *t, int slot, size_t from, size_t to, long timeout_ms);
int topo_cluster_migrate(topo *t, int slot, size_t from, size_t to, long timeout_ms);

/* A running replica of master m (by the replicas' INFO replication), or -1. */
int topo_cluster_replica_of(topo *t, size_t m);

/* CLUSTER FAILOVER on replica r, then waits until the Cluster is settled
 * with r serving the slots of its former master, and the former master (if
 * it runs) r's replica. 0 or -1. */
int topo_cluster_failover(topo *t, size_t r, long timeout_ms);

/* Waits until the Cluster is settled: every running node says
 * cluster_state:ok, agrees with the others on who serves every slot, and
 * sees every running server in its present role (by the server's own INFO
 * replication), in CLUSTER NODES and in CLUSTER SLOTS: each master with
 * exactly the replicas that are in sync with it. A replica out of sync
 * keeps it waiting. Processes killed or paused are not asked, nor checked. 0
 * or -1. */
int topo_cluster_wait_ok(topo *t, long timeout_ms);

/* ---- both ---- */

/* The URI the library takes:
 *   redis-sentinel://127.0.0.1:P1,127.0.0.1:P2,...?sentinelMasterId=NAME
 *   redis-cluster://127.0.0.1:P1,127.0.0.1:P2,...   (every node)  */
const char *topo_uri(const topo *t);

/* Kills every process, removes the directory (see TOPO_KEEP) and frees t.
 * NULL is a no-op. */
void topo_free(topo *t);

size_t topo_count(const topo *t);
bool topo_is_sentinel(const topo *t, size_t i);
int topo_port(const topo *t, size_t i);
/* "127.0.0.1:PORT" of process i. */
const char *topo_addr(const topo *t, size_t i);
bool topo_is_running(const topo *t, size_t i);   /* started, not killed */
bool topo_is_paused(const topo *t, size_t i);    /* SIGSTOPped */

/* SIGSTOP and SIGCONT process i. */
int topo_pause(topo *t, size_t i);
int topo_resume(topo *t, size_t i);
/* SIGKILL process i and reap it. */
int topo_kill(topo *t, size_t i);
/* Starts process i again on its port and waits until it answers PING
 * (sentinels: and have their periods lowered again). with_data: with
 * its files as the kill left them; without: its data files removed and the
 * server started with --save "" --appendonly no (it comes back empty, and
 * stays without persistence); a sentinel always keeps its configuration.
 * Roles come from the config file (as Sentinel last rewrote it), a
 * Cluster node's membership from its nodes.conf. */
int topo_restart(topo *t, size_t i, bool with_data);

/* Runs one command (redisCommand format) on process i: the reply (free it
 * with freeReplyObject), or NULL when i cannot be reached. */
redisReply *topo_cmd(topo *t, size_t i, const char *fmt, ...);
/* The same with an argument vector (binary-safe; lens NULL: strlen). */
redisReply *topo_cmd_argv(topo *t, size_t i, int argc, const char **argv, const size_t *lens);
/* One command; 0 when it answered without an error. */
int topo_exec(topo *t, size_t i, const char *fmt, ...);
/* Waits until every running replica of server m (by its INFO replication)
 * has everything m wrote so far (its master_repl_offset now). The number of
 * those replicas, or -1 after timeout_ms. WAIT cannot do this through
 * topo_cmd: it waits for the writes of its own connection, and each
 * topo_cmd is a connection of its own. */
int topo_wait_sync(topo *t, size_t m, long timeout_ms);

/* The value of field in INFO section on process i ("role" in
 * "replication"), malloc'd, or NULL. */
char *topo_info(topo *t, size_t i, const char *section, const char *field);

#endif /* REDLOCK_TEST_TOPO_H */
