/* token.h - lock tokens. */
#ifndef RL_TOKEN_H
#define RL_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define RL_TOKEN_BYTES 16
#define RL_TOKEN_LEN (RL_TOKEN_BYTES * 2)

/* Writes RL_TOKEN_BYTES of raw as lowercase hex, NUL-terminated. */
void rl_token_hex(char out[RL_TOKEN_LEN + 1], const unsigned char raw[RL_TOKEN_BYTES]);

#endif /* RL_TOKEN_H */
