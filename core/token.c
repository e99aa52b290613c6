/* token.c - lock tokens from the operating system's CSPRNG. */
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include "internal.h"

/* Fills buf with n random bytes from getrandom(2), or /dev/urandom where the
 * kernel has no getrandom. */
static int random_bytes(unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r > 0) {
            got += (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && errno == ENOSYS) {
            break;
        } else {
            return -1;
        }
    }
    if (got == n)
        return 0;

    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else if (!(r < 0 && errno == EINTR))
            break;
    }
    close(fd);
    return got == n ? 0 : -1;
}

int rl_token_new(char out[RL_TOKEN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[RL_TOKEN_BYTES];
    if (random_bytes(raw, sizeof raw) != 0)
        return rl_fail(REDLOCK_ESYSTEM, "the operating system's random source failed");
    for (size_t i = 0; i < RL_TOKEN_BYTES; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 0xf];
    }
    out[RL_TOKEN_LEN] = '\0';
    return REDLOCK_OK;
}

uint32_t rl_random_u32(void)
{
    uint32_t v = 0;
    if (random_bytes((unsigned char *)&v, sizeof v) != 0)
        v = (uint32_t)rl_now_ms();
    return v;
}
