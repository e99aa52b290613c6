/* random.h - the operating system's CSPRNG: the random bytes of a client's
 * tokens and retry jitter (client.h's rl_random_fn), for the clients of the
 * public API. */
#ifndef RL_RANDOM_H
#define RL_RANDOM_H

#include <stddef.h>

/* Fills buf with n bytes from getrandom(2) (or /dev/urandom); 0 or -1. */
int rl_os_random(void *unused, void *buf, size_t n);

#endif /* RL_RANDOM_H */
