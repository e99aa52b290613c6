/*
 * wake.h - lock calls woken by releases (wake.c). A lock call waiting for a
 * lock held elsewhere registers (rl_waker_await) with the keys it waits for;
 * the client's waker thread makes its eventfd (rl_waiter_fd) readable when
 * it is to try again; rl_waiter_told consumes that. rl_waker_done ends the
 * registration, with a note (maybe ""; note may be NULL) on why waiters are
 * not being woken.
 */
#ifndef RL_WAKE_H
#define RL_WAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "cmd.h"

struct rl_client;

typedef struct rl_waiter rl_waiter;
struct rl_waker *rl_waker_new(const struct rl_client *c);
void rl_waker_free(struct rl_waker *w);
/* In a child after fork(): the parent's thread and waiters are not there. */
void rl_waker_forget(struct rl_waker *w);
rl_waiter *rl_waker_await(struct rl_client *ctx, const rl_keys *keys);
int rl_waiter_fd(const rl_waiter *r);
bool rl_waiter_told(rl_waiter *r);
void rl_waker_done(struct rl_client *ctx, rl_waiter *r, char *note, size_t notelen);

#endif /* RL_WAKE_H */
