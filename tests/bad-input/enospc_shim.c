/* tests/bad-input/enospc_shim — LD_PRELOAD shim simulating a full disk: write(2) on a file
 * descriptor whose path contains $FA_ENOSPC_MATCH accepts at most $FA_ENOSPC_AFTER bytes
 * (default 0) per descriptor lifetime, then fails with ENOSPC. Everything else passes through.
 * Built at test time by tests/unit/test_bad_fs.c (cc -shared -fPIC). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static size_t written[4096];

ssize_t write(int fd, const void *buf, size_t n)
{
    const char *match = getenv("FA_ENOSPC_MATCH");
    if (match && *match && fd > 2 && fd < 4096) {
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k > 0) {
            target[k] = 0;
            if (strstr(target, match)) {
                const char *a = getenv("FA_ENOSPC_AFTER");
                size_t after = a ? strtoull(a, NULL, 10) : 0;
                if (written[fd] >= after) {
                    errno = ENOSPC;
                    return -1;
                }
                if (n > after - written[fd]) n = after - written[fd];
                ssize_t w = syscall(SYS_write, fd, buf, n);
                if (w > 0) written[fd] += (size_t)w;
                return w;
            }
        }
    }
    if (fd >= 0 && fd < 4096) written[fd] = 0; /* a reused descriptor starts over */
    return syscall(SYS_write, fd, buf, n);
}
