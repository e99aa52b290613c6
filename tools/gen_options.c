/*
 * gen_options.c - prints the library's options from core/options.def, the
 * one table of them: `gen_options markdown` the README's table, `gen_options
 * header` the lines of redlock.h's comment. scripts/gen-options.sh puts
 * them in place; tests/options/check_docs.sh checks they are.
 */
#include <stdio.h>
#include <string.h>

typedef struct entry {
    const char *name, *kind, *min, *max, *def, *help;
} entry;

#define RL_OPTION(name, kind, field, min, max, def, help) \
    { #name, #kind, #min, #max, def, help },
static const entry options[] = {
#include "options.def"
};
#undef RL_OPTION

#define N_OPTIONS (sizeof options / sizeof options[0])

/* "1 to 600000", "0 <= x < 1", "at most 4095 bytes". */
static void range(const entry *e, char *out, size_t len)
{
    if (strcmp(e->kind, "FRACTION") == 0)
        snprintf(out, len, "%s <= x < %s", e->min, e->max);
    else if (strcmp(e->kind, "STRING") == 0)
        snprintf(out, len, "at most %s bytes", e->max);
    else
        snprintf(out, len, "%s to %s", e->min, e->max);
}

static void markdown(void)
{
    puts("| option | default | values | meaning |");
    puts("|---|---|---|---|");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char r[64];
        range(&options[i], r, sizeof r);
        printf("| `%s` | %s%s%s | %s | %s |\n", options[i].name, options[i].def[0] ? "" : "\"",
               options[i].def, options[i].def[0] ? "" : "\"", r, options[i].help);
    }
}

/* Prints text wrapped to width, each line after prefix. */
static void wrapped(const char *prefix, const char *text, size_t width)
{
    const char *p = text;
    while (*p) {
        size_t n = strlen(p);
        if (n > width) {
            n = width;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0)
                n = width;
        }
        printf("%s%.*s\n", prefix, (int)n, p);
        p += n;
        while (*p == ' ')
            p++;
    }
}

static void header(void)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char r[64], head[160];
        range(&options[i], r, sizeof r);
        snprintf(head, sizeof head, " *     %s (default \"%s\"; %s)", options[i].name,
                 options[i].def, r);
        puts(head);
        wrapped(" *         ", options[i].help, 80);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "markdown") == 0)
        markdown();
    else if (argc == 2 && strcmp(argv[1], "header") == 0)
        header();
    else {
        fprintf(stderr, "usage: gen_options markdown|header\n");
        return 64;
    }
    return 0;
}
