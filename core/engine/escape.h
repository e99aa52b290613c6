/*
 * escape.h - control bytes escaped, so that a name or a message always
 * stays on one line of a log. One definition, inline, for the library's
 * events and errors and for the tool's own messages (tools/), which link
 * the public library only.
 */
#ifndef RL_ESCAPE_H
#define RL_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline bool rl_is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* Whether s has a byte rl_escape_controls escapes. */
static inline bool rl_has_controls(const char *s)
{
    for (; *s; s++)
        if (rl_is_control((unsigned char)*s))
            return true;
    return false;
}

/* Copies src to out (cap bytes, cap > 0, always terminated, cut to fit)
 * with every control byte (below 0x20, and 0x7f) escaped: \n, \r, \t, else
 * \xNN. Returns out. */
static inline char *rl_escape_controls(char *out, size_t cap, const char *src)
{
    static const char hex[] = "0123456789abcdef";
    size_t j = 0;
    for (const unsigned char *c = (const unsigned char *)src; *c; c++) {
        char esc[4] = { (char)*c };
        size_t n = 1;
        if (rl_is_control(*c)) {
            char letter = *c == '\n' ? 'n' : *c == '\r' ? 'r' : *c == '\t' ? 't' : 0;
            esc[0] = '\\';
            esc[1] = letter ? letter : 'x';
            esc[2] = hex[*c >> 4];
            esc[3] = hex[*c & 15];
            n = letter ? 2 : 4;
        }
        if (j + n >= cap)
            break;
        memcpy(out + j, esc, n);
        j += n;
    }
    out[j] = '\0';
    return out;
}

#endif /* RL_ESCAPE_H */
