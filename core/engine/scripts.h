/* scripts.h - the Lua scripts (core/engine/scripts/, one .lua file each), their SHA1 digests
 * and the function library of them all, generated into scripts.c by CMake from one source
 * (cmake/redlock_scripts.cmake). A script is sent in one of three ways: FCALL of its function
 * when the node has the library (Redis 7.0+, loaded by an administrator or a client allowed
 * to: conn.h), else EVALSHA of its digest, or EVAL in full. */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H

#include <stddef.h>

typedef struct rl_script {
    const char *body;
    const char *sha1;
    const char *fn;       /* its function in the library: redlock_v<version>_<script> */
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

/* Every script (a file added to core/engine/scripts is one more), in the order of their names. */
extern const rl_script *const rl_script_all[];
extern const size_t rl_script_count;

/* The function library of every script: FUNCTION LOAD's text, its name (redlock_v and the
 * start of the text's SHA1: another version is another library, beside it on the server), and
 * its function that answers the name (a client's probe: is the library there, may I call it). */
extern const char rl_library[];
extern const char rl_library_name[];
extern const char rl_library_probe[];

/* The scripts loaded on every connection that does not call the library (SCRIPT LOAD in its
 * handshake). */
#define RL_N_SCRIPTS 3
extern const rl_script *const rl_scripts[RL_N_SCRIPTS];

#endif /* RL_SCRIPTS_H */
