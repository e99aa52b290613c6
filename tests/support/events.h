/*
 * events.h - a recorder of a client's events (redlock_ctx_set_log) for the
 * C tests: every event is kept, with its level, until the recorder is
 * cleared or freed. Thread-safe: events come from the library's threads.
 */
#ifndef REDLOCK_TEST_EVENTS_H
#define REDLOCK_TEST_EVENTS_H

#include <stddef.h>

#include "redlock.h"

typedef struct events events;

events *events_new(void);
/* NULL is a no-op. Free it after the clients it records. */
void events_free(events *e);
/* Records ctx's events of min_level and above. */
void events_record(events *e, redlock_ctx *ctx, int min_level);
void events_clear(events *e);
size_t events_total(events *e);
/* The i-th event recorded, as "level event: message", copied into out;
 * 0 when there is no such event. */
int events_line(events *e, size_t i, char *out, size_t len);
/* How many events named name were recorded (whose message holds needle,
 * unless it is NULL). */
size_t events_count(events *e, const char *name, const char *needle);
/* Copies into out the message of the first event named name holding needle
 * (NULL: any) and returns its level; 0 when there is none. */
int events_find(events *e, const char *name, const char *needle, char *out, size_t len);
/* Waits up to ms for events_count(e, name, needle) > 0; returns that count. */
size_t events_wait(events *e, const char *name, const char *needle, long ms);

#endif /* REDLOCK_TEST_EVENTS_H */
