/* scripts.h - the Lua scripts (core/engine/scripts/, one .lua file each) and their SHA1 digests,
 * generated into scripts.c by CMake from one source. */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

typedef struct rl_script {
    const char *body;
    const char *sha1;
} rl_script;

extern const rl_script rl_script_acquire;   /* SET NX PX on all KEYS or none; fencing: and INCR */
extern const rl_script rl_script_release;   /* DEL each KEY whose value is ARGV[1] */
extern const rl_script rl_script_extend;    /* PEXPIRE all KEYS if all are ARGV[1] */

/* Queries and forced unlocks are rare: these go in full (EVAL), and are not
 * loaded on every connection as the three above are. */
extern const rl_script rl_script_inspect;   /* GET and PTTL of KEYS[1] */
extern const rl_script rl_script_force;     /* DEL KEYS[1] whatever its token */
/* Sent only when an acquisition's counters disagree (fencing): rare too. */
extern const rl_script rl_script_fence;     /* raise each KEY's counter to ARGV[i + 1] */
/* The renewal of many kept locks at once: sent by digest, and in full after
 * the node's NOSCRIPT (once per node while its script cache lasts). */
extern const rl_script rl_script_extend_many;   /* PEXPIRE each KEY that holds its token */
/* Read-write locks' calls (a read lock's acquire, extend and release, a
 * write lock's extend and release): by digest too. */
extern const rl_script rl_script_rw;
/* Semaphores' calls (a permit's acquire, extend and release, and a query of
 * the permits held): by digest too. */
extern const rl_script rl_script_sem;
/* Fair locks' acquire (a ticket, a place in the queue, the lock for its
 * head) and release (waking the head): by digest too. */
extern const rl_script rl_script_fair;

/* Sent in full once on each new connection (its handshake). */
extern const rl_script rl_script_guard;     /* may this server have lost keys? */

/* The scripts loaded on every connection (SCRIPT LOAD in its handshake). */
#define RL_N_SCRIPTS 3
extern const rl_script *const rl_scripts[RL_N_SCRIPTS];

#endif /* RL_SCRIPTS_H */
