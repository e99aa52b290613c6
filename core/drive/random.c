/* random.c - the operating system's CSPRNG (see random.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "random.h"

int rl_os_random(void *unused, void *out, size_t n)
{
    (void)unused;
    unsigned char *buf = out;
    size_t got = 0;
    while (got < n) {
        /* The system call, not glibc's getrandom(), which glibc has only
         * since 2.25: the library runs on glibc 2.17. */
        long r = syscall(SYS_getrandom, buf + got, n - got, 0);
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
