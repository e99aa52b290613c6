/* random.c - the operating system's CSPRNG (see random.h). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* glibc has getrandom() since 2.25; the library runs on glibc 2.17, where it
 * makes the system call itself (musl has had it since 1.1.20). */
#if defined(__GLIBC__) && (__GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 25))
#include <sys/syscall.h>
static ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    return (ssize_t)syscall(SYS_getrandom, buf, len, flags);
}
#else
#include <sys/random.h>
#endif

#include "random.h"

int rl_os_random(void *unused, void *out, size_t n)
{
    (void)unused;
    unsigned char *buf = out;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno == EINTR)
            continue;
        else if (r < 0 && errno == ENOSYS)
            break;
        else
            return -1;
    }
    if (got == n)
        return 0;

    /* A kernel without getrandom: /dev/urandom. */
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
