/*
 * conn_feed.h - a connection of the engine driven by hand in unit tests:
 * replies fed to it as RESP text, and what it would write now.
 */
#ifndef RL_TEST_CONN_FEED_H
#define RL_TEST_CONN_FEED_H

#include <string.h>

#include "conn.h"
#include "engine.h"

/* Feeds a reply to c (its bytes) and hands what comes out to the engine. */
static inline void answer(rl_conn *c, const char *bytes, int64_t now)
{
    rl_engine_received(c, bytes, strlen(bytes), now);
}

/* The bytes c may write now, as text. */
static inline const char *out(rl_conn *c, size_t *len)
{
    const char *bytes = NULL;
    *len = rl_conn_output(c, &bytes);
    return *len ? bytes : "";
}

#endif /* RL_TEST_CONN_FEED_H */
