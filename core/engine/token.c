/* token.c - lock tokens, from random bytes (the client's source, client.h). */

#include "token.h"

void rl_token_hex(char out[RL_TOKEN_LEN + 1], const unsigned char raw[RL_TOKEN_BYTES])
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < RL_TOKEN_BYTES; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 0xf];
    }
    out[RL_TOKEN_LEN] = '\0';
}
