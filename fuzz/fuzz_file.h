/* fuzz/fuzz_file — the path-based importers read files: write each fuzz input to one reusable
 * file in a private temp folder (created once per process, removed at exit). */
#ifndef FA_FUZZ_FILE_H
#define FA_FUZZ_FILE_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir[256];

static void fuzz_file_cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir);
    if (fuzz_dir[0]) (void)!system(cmd);
}

/* Path of a file holding exactly data[0..size) (name ends in `suffix`); aborts on I/O failure
 * (that is the harness failing, not the code under test). */
static const char *fuzz_file_write(const uint8_t *data, size_t size, const char *suffix)
{
    static char path[320];
    if (!fuzz_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/fa-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_dir)) abort();
        atexit(fuzz_file_cleanup);
    }
    snprintf(path, sizeof path, "%s/input%s", fuzz_dir, suffix);
    /* No state may cross iterations: SQLite side files of the previous input go too. */
    static const char *const side[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        char p2[340];
        snprintf(p2, sizeof p2, "%s%s", path, side[i]);
        unlink(p2);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) abort();
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) abort();
        off += (size_t)w;
    }
    close(fd);
    return path;
}

#endif
