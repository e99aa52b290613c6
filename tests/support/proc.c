/* proc.c - what the test support's process sets share (see proc.h). */
#include "proc.h"

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nodes.h"   /* now_ms, sleep_ms */

int proc_free_port(void)
{
    static int seeded;
    if (!seeded) {
        srand((unsigned)(getpid() ^ now_ms()));
        seeded = 1;
    }
    for (int tries = 0; tries < 200; tries++) {
        int port = 20000 + rand() % 12768;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return -1;
        struct sockaddr_in addr;
        memset(&addr, 0, sizeof(addr));
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons((uint16_t)port);
        int ok = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
        close(fd);
        if (ok)
            return port;
    }
    return -1;
}

struct timeval proc_timeval_ms(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

void proc_reap(pid_t *pid, long timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    while (waitpid(*pid, NULL, WNOHANG) == 0) {
        if (now_ms() >= deadline) {
            kill(*pid, SIGKILL);
            waitpid(*pid, NULL, 0);
            break;
        }
        sleep_ms(5);
    }
    *pid = 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void proc_remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}
