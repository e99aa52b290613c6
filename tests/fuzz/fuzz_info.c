/*
 * fuzz_info.c - the node's run_id read from an INFO reply (rl_info_run_id),
 * from any bytes: the reply is binary-safe, not NUL-terminated, and its
 * length is exact, so AddressSanitizer sees any read past its end.
 *
 * Checked: a run_id found is 40 hex digits that the text holds at the start
 * of a line after "run_id:"; and a well-formed run_id line placed after text
 * that has no run_id line of its own is always found, whatever follows it.
 */
#include <string.h>

#include "fuzz.h"
#include "node.h"

#define FIELD "run_id:"
#define FIELD_LEN (sizeof FIELD - 1)
#define KNOWN_ID "0123456789abcdefABCDEF0123456789abcdef01"

static const char hex_digits[] = "0123456789abcdefABCDEF";

/* Whether text holds FIELD at the start of a line (followed by id, if given). */
static int has_field_line(const char *text, size_t len, const char *id)
{
    size_t need = FIELD_LEN + (id ? 40 : 0);
    for (size_t i = 0; i + need <= len; i++) {
        if (i > 0 && text[i - 1] != '\n')
            continue;
        if (memcmp(text + i, FIELD, FIELD_LEN) == 0
            && (!id || memcmp(text + i + FIELD_LEN, id, 40) == 0))
            return 1;
    }
    return 0;
}

/* Calls the parser on an exact-size copy of text. */
static int parse(const char *text, size_t len, char out[41])
{
    char *copy = malloc(len ? len : 1);
    CHECK(copy != NULL);
    memcpy(copy, text, len);
    memset(out, 'x', 41);
    int rc = rl_info_run_id(copy, len, out);
    free(copy);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    char id[41];
    int rc = parse(text, size, id);
    CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        CHECK(id[40] == '\0');
        CHECK(strspn(id, hex_digits) == 40);
        CHECK(has_field_line(text, size, id));
    }

    /* The input split in two around a good line, as INFO would have it. */
    size_t half = size / 2;
    if (has_field_line(text, half, NULL))
        return 0;
    static const char line[] = "\r\n" FIELD KNOWN_ID "\r\n";
    size_t line_len = sizeof line - 1;
    char *reply = malloc(size + line_len);
    CHECK(reply != NULL);
    memcpy(reply, text, half);
    memcpy(reply + half, line, line_len);
    memcpy(reply + half + line_len, text + half, size - half);
    rc = parse(reply, size + line_len, id);
    free(reply);
    CHECK(rc == 0);
    CHECK(strcmp(id, KNOWN_ID) == 0);
    return 0;
}
