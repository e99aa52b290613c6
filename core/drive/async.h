/*
 * async.h - the client's asynchronous calls (async.c): one thread per
 * client drives every call under way in one poll loop, and renews watched
 * locks; callbacks run on it. The calls' entry points are calls.c's.
 */
#ifndef RL_ASYNC_H
#define RL_ASYNC_H

#include "op.h"

struct rl_client;

/* The state of a client's asynchronous calls, and its end (which waits for
 * the calls under way; waiting locks are cancelled). */
struct rl_async *rl_async_new(void);
void rl_async_free(struct rl_client *ctx, struct rl_async *a);
/* In a child after fork(): the parent's thread is not there. */
void rl_async_forget(struct rl_async *a);

/* Hands op to the client's thread, starting it if it is not running; done
 * is called there with the outcome. The thread owns op from here on, also
 * when this fails (with this thread's message set). is_lock: a lock that
 * may wait its turn; is_unlock: an unlock, held back while its handle's
 * renewal runs. */
int rl_async_submit(struct rl_client *ctx, rl_op *op, bool is_lock, bool is_unlock,
                    redlock_done_fn done, void *data);
/* Renews h on the client's thread until it is unlocked, freed or lost
 * (then lost is called there): REDLOCK_ENOTHELD when it is not held,
 * REDLOCK_EINVAL when it is watched already. */
int rl_async_watch(redlock_handle *h, redlock_lost_fn lost, void *data);
/* The owner's extension of h by ttl_ms: of a watched h, made by its keeper
 * after the renewal under way, if any, ends (*kept then true: tell its end
 * with rl_async_extended before freeing it), so that the next renewal is
 * planned from it and a loss it finds is told as a renewal's would be;
 * otherwise a plain one. */
int rl_async_extend(rl_op **op, redlock_handle *h, int64_t ttl_ms, bool *kept);
void rl_async_extended(redlock_handle *h, rl_op *op);
/* No extension of a watched h starts from now on (an unlock is coming);
 * one under way holds the unlock back until it ends. */
void rl_async_stop_renewals(redlock_handle *h);
/* Stops the renewal of h, if it is watched, waiting for an extension or a
 * lost callback under way (unless called from the client's own thread).
 * freeing: h is about to be freed; false is returned when that must wait
 * for what runs on the client's thread (which then frees it). */
bool rl_async_unwatch(redlock_handle *h, bool freeing);

#endif /* RL_ASYNC_H */
