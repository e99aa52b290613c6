/*
 * helpers.h - what the C test programs share: cmocka, the library's header,
 * the node harness, and assertions that print the library's error detail.
 */
#ifndef REDLOCK_TEST_HELPERS_H
#define REDLOCK_TEST_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nodes.h"
#include "redlock.h"

/* Asserts that call returns expected, showing both codes and redlock_errmsg(). */
#define assert_rc(call, expected)                                                        \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        int expected_ = (expected);                                                      \
        if (rc_ != expected_)                                                            \
            fail_msg("%s returned %d (%s), expected %d (%s); errmsg: %s", #call, rc_,    \
                     redlock_strerror(rc_), expected_, redlock_strerror(expected_),      \
                     redlock_errmsg());                                                  \
    } while (0)

/* Asserts that call fails with expected and leaves a non-empty redlock_errmsg(). */
#define assert_fails(call, expected)                                                     \
    do {                                                                                 \
        assert_rc(call, expected);                                                       \
        if (redlock_errmsg()[0] == '\0')                                                 \
            fail_msg("%s failed as expected but redlock_errmsg() is empty", #call);      \
    } while (0)

/* Non-NULL pointers that no call returns: *out is set to one before a call
 * that must fail, to see the call reset it to NULL. */
extern char unset_out;
#define UNSET_HANDLE ((redlock_handle *)&unset_out)
#define UNSET_CTX ((redlock_ctx *)&unset_out)

/* A client for every node of ns. Options a test does not set are made
 * generous (second-long deadlines, short retry pauses) so that a loaded
 * machine or a sanitizer build does not make nodes look down. options is a
 * NULL-terminated list of name, value pairs, or NULL. */
redlock_ctx *ctx_for(const nodes *ns, const char *const *options);
/* The same for the first n nodes of ns alone. */
redlock_ctx *ctx_for_first(const nodes *ns, size_t n, const char *const *options);

/* cmocka group fixtures: *state is a set of five nodes, started for the
 * group and stopped after it. */
int five_nodes_setup(void **state);
int nodes_teardown(void **state);

/* Sets the options (NULL-terminated name, value pairs) on ctx, asserting each. */
void set_options(redlock_ctx *ctx, const char *const *options);

/* The key the library keeps beside name's (name, a zero byte and suffix:
 * "readers", "permits", "queue"), into buf; its length. */
size_t beside_key(char *buf, size_t len, const char *name, const char *suffix);

/* 1 when token is 32 lowercase hex characters. */
int is_token(const char *token);

/* How many threads this process has now (from /proc/self/task). */
size_t threads_now(void);

/*
 * Checks of what the nodes hold. A call returns once a quorum has answered, so
 * the other nodes may still be executing it: these wait up to CONVERGE_MS for
 * the nodes to agree before they fail.
 */
#define CONVERGE_MS 3000

/* Asserts that on nodes first .. end-1 key holds value (NULL: key missing). */
void assert_on_nodes(nodes *ns, size_t first, size_t end, const char *key, const char *value);
/* The same on every node, in database 0 or db. */
void assert_on_every_node(nodes *ns, const char *key, const char *value);
/* A quorum of the nodes holds value under key, and no node another value
 * (a node a release reached late may have refused the new holder). */
void assert_on_a_quorum(nodes *ns, const char *key, const char *value);
void assert_on_every_node_db(nodes *ns, int db, const char *key, const char *value);
/* Asserts that key's PTTL is within [low, high] on every node. */
void assert_pttl_on_every_node(nodes *ns, const char *key, long long low, long long high);

/* How many times node i ran the command named (INFO commandstats calls; a
 * refusal by the ACL is no call): 0 when it never did. */
long long node_calls(nodes *ns, size_t i, const char *command);
/* One plain lock of name taken (10 s), extended (20 s) and released. */
void lock_extend_unlock(redlock_ctx *ctx, const char *name);
/* The value of field in the line of node i (of n_nodes) of ctx's health
 * (redlock_ctx_health), into out. */
void health_value(redlock_ctx *ctx, size_t n_nodes, size_t i, const char *field, char *out,
               size_t len);

#endif /* REDLOCK_TEST_HELPERS_H */
