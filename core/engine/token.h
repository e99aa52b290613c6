/* token.h - lock tokens and the operating system's CSPRNG. */
#ifndef RL_TOKEN_H
#define RL_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define RL_TOKEN_BYTES 16
#define RL_TOKEN_LEN (RL_TOKEN_BYTES * 2)

/* Fills buf with n bytes from getrandom(2) (or /dev/urandom); 0 or -1. */
int rl_os_random(void *unused, void *buf, size_t n);

/* Writes RL_TOKEN_BYTES of raw as lowercase hex, NUL-terminated. */
void rl_token_hex(char out[RL_TOKEN_LEN + 1], const unsigned char raw[RL_TOKEN_BYTES]);

#endif /* RL_TOKEN_H */
