/* core/fs — files and folders: the atomic file writers (names we choose never go through a link;
 * a file the user named may), input files opened without ever waiting on a FIFO or device,
 * private folders checked from "/" and held by descriptor, output folders written into a
 * staging folder and swapped in whole, same-file checks, and file names derived from input
 * names. docs/hardening.md "Output files" and "Shared folders, links and files that are not
 * files". */
#include "core.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* ---- the atomic writer ---- */

static fa_status write_all(fa_ctx *ctx, int fd, const char *path, const void *data, size_t len)
{
    const char *p = data;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, p + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            return fa_ctx_error(ctx, FA_ERR_IO, "%s: write failed at byte %zu: %s", path, off, strerror(e));
        }
        off += (size_t)w;
    }
    return FA_OK;
}

/* A character device or FIFO (a terminal, /dev/null, a pipe, /dev/stdout): written in place. */
static fa_status write_through(fa_ctx *ctx, const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    fa_status s = write_all(ctx, fd, path, data, len);
    if (close(fd) != 0 && !s) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    return s;
}

/* The parts one after another (a part with data NULL: that many zero bytes). */
static fa_status write_parts(fa_ctx *ctx, int fd, const char *path, const fa_write_part *parts, int n)
{
    static const char zeros[4096];
    fa_status s = FA_OK;
    for (int i = 0; i < n && !s; i++) {
        if (parts[i].data) {
            s = write_all(ctx, fd, path, parts[i].data, parts[i].len);
            continue;
        }
        for (size_t left = parts[i].len; left && !s;) {
            size_t k = left < sizeof zeros ? left : sizeof zeros;
            s = write_all(ctx, fd, path, zeros, k);
            left -= k;
        }
    }
    return s;
}

/* NAME.tmp.<pid> in dirfd (O_EXCL|O_NOFOLLOW: never through a planted link), fsync, renameat
 * over NAME in the same folder. */
static fa_status write_replace_parts_at(fa_ctx *ctx, int dirfd, const char *name, const char *shown,
                                        const fa_write_part *parts, int n, mode_t mode)
{
    char tmp[NAME_MAX + 1];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", name, (long)getpid()) >= sizeof tmp)
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: file name too long", shown);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST) { /* left by a killed writer with our pid */
        unlinkat(dirfd, tmp, 0);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    }
    if (fd < 0) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create: %s", shown, strerror(errno));
    fa_status s = write_parts(ctx, fd, shown, parts, n);
    if (!s && fsync(fd) != 0 && errno != EINVAL) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: fsync failed: %s", shown, strerror(errno));
    if (close(fd) != 0 && !s) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: close failed: %s", shown, strerror(errno));
    if (!s && renameat(dirfd, tmp, dirfd, name) != 0)
        s = fa_ctx_error(ctx, FA_ERR_IO, "%s: rename failed: %s", shown, strerror(errno));
    if (s) unlinkat(dirfd, tmp, 0);
    return s;
}

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m)) return "a folder";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISFIFO(m)) return "a named pipe (FIFO)";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}

static fa_status write_file_parts_at(fa_ctx *ctx, int dirfd, const char *name, const char *shown,
                                     const fa_write_part *parts, int n)
{
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/'))
        return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: '%s' is not a file name", shown, name);
    struct stat sb;
    mode_t mode = 0644;
    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(sb.st_mode))
            return fa_ctx_error(ctx, FA_ERR_IO,
                                "%s: is a symbolic link, and fuse-advise never writes through a link it did not "
                                "create (whoever planted it chose what would be overwritten): remove it, or write "
                                "elsewhere",
                                shown);
        if (!S_ISREG(sb.st_mode))
            return fa_ctx_error(ctx, FA_ERR_IO, "%s: is %s, not a file fuse-advise wrote: refusing to write over it",
                                shown, kind_of(sb.st_mode));
        mode = sb.st_mode & 07777;
    } else if (errno != ENOENT) {
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat: %s", shown, strerror(errno));
    }
    return write_replace_parts_at(ctx, dirfd, name, shown, parts, n, mode);
}

fa_status fa_write_file_at(fa_ctx *ctx, int dirfd, const char *name, const char *shown, const void *data, size_t len)
{
    fa_write_part one = {data, len};
    return write_file_parts_at(ctx, dirfd, name, shown, &one, 1);
}

fa_status fa_write_file_atomic(fa_ctx *ctx, const char *path, const void *data, size_t len)
{
    fa_write_part one = {data, len};
    return fa_write_file_parts_atomic(ctx, path, &one, 1);
}

fa_status fa_write_file_parts_atomic(fa_ctx *ctx, const char *path, const fa_write_part *parts, int n)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: names a folder, not a file", path);
    size_t dl = slash ? (size_t)(slash - path) : 0;
    char *dir = malloc(dl + 2);
    if (!dir) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", path);
    if (!slash) strcpy(dir, ".");
    else if (dl == 0) strcpy(dir, "/");
    else {
        memcpy(dir, path, dl);
        dir[dl] = 0;
    }
    /* the folder is the one named (a link to a folder is followed: whoever named it chose it);
     * the file in it is created and renamed relative to that opened folder */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    fa_status s = FA_OK;
    if (dfd < 0) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    else {
        s = write_file_parts_at(ctx, dfd, base, path, parts, n);
        close(dfd);
    }
    free(dir);
    return s;
}

fa_status fa_link_owner_check(fa_ctx *ctx, const char *path, const char *verb)
{
    struct stat lsb;
    /* a link someone else made (in a folder they can write) chose its target: not followed, as
     * the kernel's protected_symlinks does in sticky folders; /dev/stdout (root's) and links
     * of your own are */
    if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode) && lsb.st_uid != geteuid() && lsb.st_uid != 0)
        return fa_ctx_error(ctx, FA_ERR_IO,
                            "%s: is a symbolic link owned by uid %u, neither you nor root: refusing to %s it (remove it, "
                            "or name another file)",
                            path, (unsigned)lsb.st_uid, verb);
    /* and every folder on the way as named: `shared/l/out` with `shared/l -> victim/` planted by
     * another user wrote into the victim's folder (the seventh attack pass); the current folder's
     * own ancestors are the user's choice, not the path's */
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    memcpy(p, path, n + 1);
    fa_status s = FA_OK;
    for (size_t i = 1; i < n && !s; i++) {
        if (p[i] != '/' || p[i - 1] == '/') continue;
        p[i] = 0;
        if (lstat(p, &lsb) == 0 && S_ISLNK(lsb.st_mode) && lsb.st_uid != geteuid() && lsb.st_uid != 0)
            s = fa_ctx_error(ctx, FA_ERR_IO,
                             "%s: its part %s is a symbolic link owned by uid %u, neither you nor root: refusing to %s "
                             "through it (remove it, or name the path without it)",
                             path, p, (unsigned)lsb.st_uid, verb);
        p[i] = '/';
    }
    free(p);
    return s;
}

fa_status fa_write_user_file(fa_ctx *ctx, const char *path, const void *data, size_t len)
{
    struct stat lsb, sb;
    fa_status ls = fa_link_owner_check(ctx, path, "write through");
    if (ls) return ls;
    if (lstat(path, &lsb) != 0) {
        if (errno != ENOENT) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        return fa_write_file_atomic(ctx, path, data, len);
    }
    if (S_ISREG(lsb.st_mode)) return fa_write_file_atomic(ctx, path, data, len);
    sb = lsb;
    if (S_ISLNK(lsb.st_mode) && stat(path, &sb) != 0)
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: a symbolic link whose target does not exist: not replaced", path);
    if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)) return write_through(ctx, path, data, len);
    if (S_ISREG(sb.st_mode)) {
        /* a link to a regular file: replace the target atomically, the link stays a link */
        char *real = realpath(path, NULL);
        if (!real) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot resolve the link: %s", path, strerror(errno));
        fa_status s = fa_write_file_atomic(ctx, real, data, len);
        free(real);
        if (s) fa_ctx_wrap(ctx, s, "%s: ", path);
        return s;
    }
    return fa_ctx_error(ctx, FA_ERR_IO, "%s: is %s, refusing to write over it", path, kind_of(sb.st_mode));
}

/* ---- input files ---- */

/* An anonymous pipe (pipefs: a shell's `|`, `<(...)`), not a FIFO with a name on a filesystem. */
static bool anonymous_pipe(int fd)
{
    struct statfs f;
    return fstatfs(fd, &f) == 0 && f.f_type == PIPEFS_MAGIC;
}

fa_status fa_open_input(fa_ctx *ctx, const char *path, unsigned flags, int *out_fd)
{
    struct stat sb, fb;
    if (stat(path, &sb) != 0) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    bool pipe_ok = (flags & FA_INPUT_PIPE_OK) && S_ISFIFO(sb.st_mode);
    /* refused by its type before open(2): opening a FIFO waits for a writer, a device may act */
    if (!S_ISREG(sb.st_mode) && !pipe_ok) goto refuse;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &fb) != 0) {
        int e = errno;
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    sb = fb;
    if (!(S_ISREG(fb.st_mode) || (pipe_ok && S_ISFIFO(fb.st_mode) && anonymous_pipe(fd)))) {
        close(fd);
        goto refuse;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: fcntl: %s", path, strerror(e));
    }
    *out_fd = fd;
    return FA_OK;
refuse:
    if (S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode) || S_ISSOCK(sb.st_mode) || S_ISBLK(sb.st_mode))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: is %s, not a regular file: refused (reading it could wait forever)%s",
                            path, kind_of(sb.st_mode),
                            (flags & FA_INPUT_PIPE_OK) && S_ISFIFO(sb.st_mode)
                                ? "; a trace may come through the shell's pipe instead: /dev/stdin or <(command)"
                                : "");
    return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: is %s, not a regular file", path, kind_of(sb.st_mode));
}

fa_status fa_input_regular_or_absent(fa_ctx *ctx, const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (errno == ENOENT) return FA_OK;
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    }
    if (S_ISREG(sb.st_mode)) return FA_OK;
    return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: is %s, not a regular file: refused (SQLite would open it and could wait forever)",
                        path, kind_of(sb.st_mode));
}

static fa_status companions_of(fa_ctx *ctx, const char *db_path)
{
    static const char *const suffix[] = {"-journal", "-wal", "-shm"};
    size_t n = strlen(db_path) + 16;
    char *p = malloc(n);
    if (!p) return fa_ctx_error(ctx, FA_ERR_NOMEM, "%s: out of memory", db_path);
    fa_status s = FA_OK;
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0] && !s; i++) {
        snprintf(p, n, "%s%s", db_path, suffix[i]);
        s = fa_input_regular_or_absent(ctx, p);
        /* a companion hard-linked to another name is that file: SQLite rewrites a -shm and a -wal
         * in place (a `victim` linked as DB-shm became 32 KiB of shm index on `runs`; the sixth
         * attack pass), so one with more than one link is refused */
        struct stat sb;
        if (!s && lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_nlink > 1)
            s = fa_ctx_error(ctx, FA_ERR_INPUT,
                             "%s: has %lu hard links: SQLite writes into this file beside the database, and another name "
                             "shares it; refusing (remove the extra link, or this file if no SQLite process has the "
                             "database open)",
                             p, (unsigned long)sb.st_nlink);
    }
    free(p);
    return s;
}

/* Whether another process holds a POSIX lock on any byte of `file` (SQLite's locks: the main
 * file's lock-byte range, the -shm's lock slots); false when it cannot be opened. */
static bool locked_by_another(const char *file)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return false;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    bool held = fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type != F_UNLCK;
    close(fd);
    return held;
}

void fa_sqlite_remove_created(const char *path, bool wal_before, bool shm_before)
{
    /* another process with the database open (it made them between our look and now): leave them */
    char shm[4200];
    snprintf(shm, sizeof shm, "%s-shm", path);
    if (locked_by_another(path) || locked_by_another(shm)) return;
    static const char *const sfx[] = {"-wal", "-shm"};
    bool before[] = {wal_before, shm_before};
    for (int i = 0; i < 2; i++) {
        if (before[i]) continue;
        char side[4200];
        struct stat sb;
        if (snprintf(side, sizeof side, "%s%s", path, sfx[i]) >= (int)sizeof side) continue;
        if (lstat(side, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) continue;
        if (i == 0 && sb.st_size > 0) continue; /* something was written into it: not ours to drop */
        unlink(side);
    }
}

char *fa_sqlite_immutable_uri(const char *path)
{
    fa_buf b;
    fa_buf_init(&b);
    fa_buf_puts(&b, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#' || *p < 0x21 || *p >= 0x7f) fa_buf_printf(&b, "%%%02X", *p);
        else fa_buf_append(&b, p, 1);
    }
    fa_buf_puts(&b, "?immutable=1");
    if (b.oom) {
        fa_buf_free(&b);
        return NULL;
    }
    return b.data;
}

const char *fa_sqlite_literal_path(const char *path, char *buf, size_t cap)
{
    if (!path) return NULL;
    if (path[0] == '/') return path;
    int n = snprintf(buf, cap, "./%s", path);
    return n >= 0 && (size_t)n < cap ? buf : NULL;
}

fa_status fa_sqlite_companions_check(fa_ctx *ctx, const char *db_path)
{
    fa_status s = companions_of(ctx, db_path);
    /* SQLite resolves a linked database's path and keeps the companions next to its target */
    char *real = s ? NULL : realpath(db_path, NULL);
    if (real && strcmp(real, db_path)) s = companions_of(ctx, real);
    free(real);
    return s;
}

/* ---- paths ---- */

/* realpath of an existing path, or realpath(dirname) + "/" + basename of a missing one. */
static char *canonical(const char *path)
{
    char *r = realpath(path, NULL);
    if (r) return r;
    char *d = strdup(path), *b = strdup(path);
    if (!d || !b) {
        free(d);
        free(b);
        return NULL;
    }
    char *rd = realpath(dirname(d), NULL);
    const char *base = basename(b);
    char *out = NULL;
    if (rd) {
        size_t n = strlen(rd) + strlen(base) + 2;
        out = malloc(n);
        if (out) snprintf(out, n, "%s/%s", strcmp(rd, "/") ? rd : "", base);
    }
    free(rd);
    free(d);
    free(b);
    return out;
}

bool fa_path_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ca = canonical(a), *cb = canonical(b);
    bool same = ca && cb && !strcmp(ca, cb);
    free(ca);
    free(cb);
    return same;
}

bool fa_path_inside(const char *dir, const char *path)
{
    char *cd = canonical(dir), *cp = canonical(path);
    bool in = false;
    if (cd && cp) {
        size_t n = strlen(cd);
        in = !strncmp(cd, cp, n) && (cp[n] == '/' || cp[n] == 0 || !strcmp(cd, "/"));
    }
    free(cd);
    free(cp);
    return in;
}

const char *fa_sanitize_file_name(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && j + 1 < cap && j < 100; p++) {
        unsigned char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                  c == '+' || (c == '.' && j > 0);
        out[j++] = ok ? (char)c : '_';
    }
    out[j] = 0;
    return out;
}

/* ---- removing a tree ---- */

static void rm_at(int parent, const char *name, int depth);

/* Relative to the folder it is in, held open, never through a link (rm_at): a tree walked by
 * full paths (nftw) could be redirected while it was removed — a planted stale staging folder
 * whose subfolder was swapped for a link to another user's folder mid-walk had 1,939 of that
 * folder's 2,000 files deleted (the seventh attack pass). */
void fa_rm_tree(const char *path)
{
    if (!path || !*path) return;
    char *d = strdup(path), *b = strdup(path);
    if (d && b) {
        size_t n = strlen(b);
        while (n > 1 && b[n - 1] == '/') b[--n] = 0; /* the entry itself, not what a slash follows */
        strcpy(d, b);
        const char *base = basename(b), *dir = dirname(d);
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
            if (strcmp(base, ".") && strcmp(base, "..") && strcmp(base, "/")) rm_at(fd, base, 0);
            close(fd);
        }
    }
    free(d);
    free(b);
}

/* Remove NAME (a file, or a folder tree) in dirfd without following links; errors ignored. */
static void rm_at(int parent, const char *name, int depth)
{
    if (unlinkat(parent, name, 0) == 0 || (errno != EISDIR && errno != EPERM) || depth > 64) return;
    for (int pass = 0; pass < 3; pass++) {
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return;
        DIR *d = fdopendir(fd);
        if (!d) {
            close(fd);
            return;
        }
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) rm_at(dirfd(d), e->d_name, depth + 1);
        closedir(d);
        if (unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno != ENOTEMPTY) return;
    }
}

void fa_rm_tree_at(int dirfd, const char *name) { rm_at(dirfd, name, 0); }

/* ---- private folders ---- */

/* Why the folder sb may not hold what we trust (NULL: it may). A folder on the way: owned by us or
 * root (its owner can rename what it holds), and writable by nobody else unless sticky (like
 * /tmp: others may add entries but not rename or remove ours). The last folder (leaf, and not
 * FA_DIR_STICKY_OK): ours, writable by nobody else. */
static const char *dir_unsafe(const struct stat *sb, bool leaf, char *why, size_t cap)
{
    uid_t me = geteuid();
    mode_t m = sb->st_mode;
    if (!S_ISDIR(m)) return "is not a folder";
    if (leaf) {
        if (sb->st_uid != me) {
            snprintf(why, cap, "is owned by uid %u, not by you (uid %u)", (unsigned)sb->st_uid, (unsigned)me);
            return why;
        }
    } else if (sb->st_uid != me && sb->st_uid != 0) {
        snprintf(why, cap, "is owned by uid %u, neither you (uid %u) nor root, and its owner can swap what it holds",
                 (unsigned)sb->st_uid, (unsigned)me);
        return why;
    }
    if (m & (S_IWGRP | S_IWOTH)) {
        if (!leaf && (m & S_ISVTX)) return NULL;
        snprintf(why, cap, "is writable by %s (mode %04o), who could swap what it holds", (m & S_IWOTH) ? "others" : "its group",
                 (unsigned)(m & 07777));
        return why;
    }
    return NULL;
}

/* Nobody but us and root can add entries to sb: a symbolic link in it was made by one of them. */
static bool dir_strict(const struct stat *sb)
{
    return (sb->st_uid == geteuid() || sb->st_uid == 0) && !(sb->st_mode & (S_IWGRP | S_IWOTH));
}

static fa_status private_fail(fa_ctx *ctx, const char *path, const char *what, const char *where, const char *why,
                              const char *hint)
{
    return fa_ctx_error(ctx, FA_ERR_IO, "%s: %s: %s %s: refusing to use it%s%s", path, what, where, why, hint ? " " : "",
                        hint ? hint : "");
}

fa_status fa_private_dir_open(fa_ctx *ctx, const char *path, unsigned flags, const char *what, const char *hint,
                              int *out_fd)
{
    if (!path || path[0] != '/') return fa_ctx_error(ctx, FA_ERR_IO, "%s: %s: not an absolute path", path ? path : "", what);
    if (strlen(path) >= PATH_MAX) return fa_ctx_error(ctx, FA_ERR_IO, "%.64s...: %s: path too long", path, what);
    char todo[2 * PATH_MAX], done[PATH_MAX], why[160], target[PATH_MAX];
    snprintf(todo, sizeof todo, "%s", path);
    strcpy(done, "/");
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), links = 0;
    if (fd < 0) return fa_ctx_error(ctx, FA_ERR_IO, "/: cannot open: %s", strerror(errno));
    const char *p = todo;
    struct stat sb;
    fa_status s = FA_OK;
    for (;;) {
        while (*p == '/') p++;
        if (fstat(fd, &sb) != 0) {
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: %s: %s: %s", path, what, done, strerror(errno));
            break;
        }
        const char *bad = dir_unsafe(&sb, !*p && !(flags & FA_DIR_STICKY_OK), why, sizeof why);
        if (bad) {
            s = private_fail(ctx, path, what, done, bad, hint);
            break;
        }
        if (!*p) break; /* fd is the folder */
        size_t n = strcspn(p, "/");
        char name[NAME_MAX + 1];
        if (n > NAME_MAX) {
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: %s: a component is longer than %d bytes", path, what, NAME_MAX);
            break;
        }
        memcpy(name, p, n);
        name[n] = 0;
        p += n;
        if (!strcmp(name, ".")) continue;
        int nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT && (flags & FA_DIR_CREATE)) {
            if (mkdirat(fd, name, 0700) != 0 && errno != EEXIST) {
                s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create the %s: %s%s%s: %s", path, what, done,
                                 strcmp(done, "/") ? "/" : "", name, strerror(errno));
                break;
            }
            nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (nfd < 0) {
            int e = errno;
            struct stat ls;
            if ((e == ELOOP || e == ENOTDIR) && fstatat(fd, name, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode)) {
                /* a link is followed only where nobody but us and root could have made it; its
                 * target is then walked and checked like any other path */
                char at[PATH_MAX + NAME_MAX + 2];
                snprintf(at, sizeof at, "the symbolic link %s%s%s", done, strcmp(done, "/") ? "/" : "", name);
                if (!dir_strict(&sb)) {
                    s = private_fail(ctx, path, what, at, "lies in a folder others can write, so it is not followed", hint);
                    break;
                }
                ssize_t tl = readlinkat(fd, name, target, sizeof target - 1);
                if (tl <= 0 || (size_t)tl >= sizeof target - 1 || ++links > 40) {
                    s = private_fail(ctx, path, what, at, "cannot be resolved (too long, or too many links)", hint);
                    break;
                }
                target[tl] = 0;
                char rest[2 * PATH_MAX];
                if ((size_t)snprintf(rest, sizeof rest, "%s/%s", target, p) >= sizeof todo) {
                    s = fa_ctx_error(ctx, FA_ERR_IO, "%s: %s: path too long once its links are resolved", path, what);
                    break;
                }
                strcpy(todo, rest);
                p = todo;
                if (target[0] == '/') {
                    close(fd);
                    fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                    strcpy(done, "/");
                    if (fd < 0) return fa_ctx_error(ctx, FA_ERR_IO, "/: cannot open: %s", strerror(errno));
                }
                continue;
            }
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: %s: %s%s%s: %s", path, what, done, strcmp(done, "/") ? "/" : "", name,
                             strerror(e));
            break;
        }
        close(fd);
        fd = nfd;
        if (!strcmp(name, "..")) {
            char *last = strrchr(done, '/');
            if (last && last != done) *last = 0;
            else strcpy(done, "/");
        } else {
            size_t dl = strlen(done);
            snprintf(done + dl, sizeof done - dl, "%s%s", dl > 1 ? "/" : "", name);
        }
    }
    if (s) {
        close(fd);
        return s;
    }
    *out_fd = fd;
    return FA_OK;
}

fa_status fa_mkdtemp_at(fa_ctx *ctx, int dirfd, const char *shown_dir, const char *prefix, char *name, size_t cap,
                        int *out_fd)
{
    for (int tries = 0;; tries++) {
        uint64_t r[2];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) fa_hash_key_random(r);
        if ((size_t)snprintf(name, cap, "%s%012llx", prefix, (unsigned long long)(r[0] & 0xffffffffffffull)) >= cap)
            return fa_ctx_error(ctx, FA_ERR_INTERNAL, "%s: folder name too long", shown_dir);
        if (mkdirat(dirfd, name, 0700) == 0) break;
        if (errno != EEXIST || tries >= 100)
            return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create a folder in it: %s", shown_dir, strerror(errno));
    }
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_uid != geteuid() || (sb.st_mode & (S_IWGRP | S_IWOTH))) {
        fa_status s = fa_ctx_error(ctx, FA_ERR_IO, "%s/%s: the folder just created was replaced: refusing to use it",
                                   shown_dir, name);
        if (fd >= 0) close(fd);
        return s;
    }
    *out_fd = fd;
    return FA_OK;
}

/* ---- output folders ---- */

#define MARKER ".fuse-advise-out"

struct fa_outdir {
    char *final; /* the folder the user named (a link to a folder: its target) */
    char *stage; /* PARENT/.<name>.fa-staging.<pid> */
    bool existed;
    const char *const *own_names; /* the caller's (static) list, checked again at the commit */
};

const char *fa_outdir_path(const fa_outdir *o) { return o->stage; }

static bool mkdirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return false;
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

/* The marker fuse-advise writes: a regular file (not a link, not a folder) whose text starts with
 * MARKER_TEXT. A marker of another shape (an empty file, a folder of that name anyone can make
 * in a shared folder or a cloned repository) marks nothing: such a folder authorised replacing
 * everything in it. */
#define MARKER_TEXT "written by fuse-advise"
static bool marker_is_ours(const char *dir)
{
    char m[8192];
    if (snprintf(m, sizeof m, "%s/%s", dir, MARKER) >= (int)sizeof m) return false;
    int fd = open(m, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    struct stat sb;
    char buf[sizeof MARKER_TEXT - 1];
    bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && read(fd, buf, sizeof buf) == (ssize_t)sizeof buf &&
              !memcmp(buf, MARKER_TEXT, sizeof buf);
    close(fd);
    return ok;
}

/* A name in kernels/ that fuse-advise writes: fa_fused_c<ID>_<8 hex>.<c|cu> (codegen/codegen.c
 * info->name, applier/judge.c fa_apply_write_kernel_source). */
static bool own_kernel_name(const char *n)
{
    if (strncmp(n, "fa_fused_c", 10)) return false;
    const char *p = n + 10;
    if (!isdigit((unsigned char)*p)) return false;
    while (isdigit((unsigned char)*p)) p++;
    if (*p++ != '_') return false;
    for (int i = 0; i < 8; i++, p++)
        if (!isxdigit((unsigned char)*p)) return false;
    return !strcmp(p, ".c") || !strcmp(p, ".cu");
}

/* Staging and displaced folders of processes that no longer exist, next to `final`. */
static void sweep_stale(const char *parent, const char *base)
{
    DIR *d = opendir(parent);
    if (!d) return;
    char pre[600];
    snprintf(pre, sizeof pre, ".%s.fa-", base);
    size_t pl = strlen(pre);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, pre, pl)) continue;
        const char *rest = e->d_name + pl, *dot = strrchr(rest, '.');
        if (!dot || (strncmp(rest, "staging.", 8) && strncmp(rest, "old.", 4))) continue;
        char *end;
        long pid = strtol(dot + 1, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", parent, e->d_name);
        /* only a staging or displaced folder of ours (it carries the marker): a user's folder that
         * happens to have such a name is not swept */
        struct stat lb;
        if (lstat(p, &lb) != 0 || !S_ISDIR(lb.st_mode) || lb.st_uid != geteuid() || !marker_is_ours(p)) continue;
        fa_rm_tree(p);
    }
    closedir(d);
}

fa_status fa_outdir_check(fa_ctx *ctx, const char *path, const char *const *own_names)
{
    if (!path || !*path) return fa_ctx_error(ctx, FA_ERR_USAGE, "empty output folder name");
    /* a link someone else made chose the folder that is replaced: not followed (as --db, -o FILE
     * and --junit refuse theirs); trailing slashes would make lstat follow it */
    char lp[4096];
    snprintf(lp, sizeof lp, "%s", path);
    for (size_t n = strlen(lp); n > 1 && lp[n - 1] == '/'; n--) lp[n - 1] = 0;
    fa_status ls = fa_link_owner_check(ctx, lp, "replace the folder behind");
    if (ls) return ls;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            if (errno == ENOTDIR)
                return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot be an output folder: a part of the path is a file", path);
            return FA_OK;
        }
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat the output folder: %s", path, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode))
        return fa_ctx_error(ctx, FA_ERR_INPUT, "%s: exists and is %s, not an output folder (name a folder)", path,
                            kind_of(sb.st_mode));
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) && fa_path_inside(path, cwd))
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: the output folder is replaced as a whole and holds the current folder: name a "
                            "sub-folder",
                            path);
    DIR *d = opendir(path);
    if (!d) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot read the output folder: %s", path, strerror(errno));
    struct dirent *e;
    char foreign[256] = "", first[256] = "";
    bool marked = false;
    char link[256] = "", kforeign[256] = "";
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!strcmp(e->d_name, MARKER)) {
            marked = marker_is_ours(path);
            if (!marked && !first[0]) snprintf(first, sizeof first, "%s", e->d_name);
            continue;
        }
        bool own = false;
        for (int i = 0; own_names && own_names[i] && !own; i++) own = !strcmp(e->d_name, own_names[i]);
        if (!own && !foreign[0]) snprintf(foreign, sizeof foreign, "%s", e->d_name);
        if (!first[0]) snprintf(first, sizeof first, "%s", e->d_name);
        char ep[8192];
        struct stat lb;
        snprintf(ep, sizeof ep, "%s/%s", path, e->d_name);
        if (lstat(ep, &lb) == 0 && S_ISLNK(lb.st_mode) && !link[0]) snprintf(link, sizeof link, "%s", e->d_name);
        /* kernels/: only the generated kernels' own names (a user's hand-written kernel there went
         * with the folder) */
        if (own && !strcmp(e->d_name, "kernels") && lstat(ep, &lb) == 0 && S_ISDIR(lb.st_mode) && !kforeign[0]) {
            DIR *kd = opendir(ep);
            struct dirent *ke;
            while (kd && (ke = readdir(kd)) && !kforeign[0])
                if (strcmp(ke->d_name, ".") && strcmp(ke->d_name, "..") && !own_kernel_name(ke->d_name))
                    snprintf(kforeign, sizeof kforeign, "kernels/%s", ke->d_name);
            if (kd) closedir(kd);
        }
    }
    closedir(d);
    if (marked && (foreign[0] || kforeign[0] || link[0]))
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: holds '%s', which fuse-advise did not write%s; the output folder is replaced as a "
                            "whole, so move it out first or name another folder",
                            path, foreign[0] ? foreign : kforeign[0] ? kforeign : link,
                            !foreign[0] && !kforeign[0] ? " (a symbolic link: fuse-advise writes none)" : "");
    if (!marked && foreign[0])
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: holds '%s', which fuse-advise did not write; the output folder is replaced as a "
                            "whole, so name a new or empty folder (or one fuse-advise wrote)",
                            path, foreign);
    /* every name one of ours, but no marker: a folder of the user's own files that happen to carry
     * our names (their report.html, a kernels/ of hand-written kernels) would be lost with it */
    if (!marked && first[0])
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: holds '%s' but no %s marker, so fuse-advise did not write it; the output folder is "
                            "replaced as a whole, so name a new or empty folder (or one fuse-advise wrote)",
                            path, first, MARKER);
    return FA_OK;
}

/* Hard links of src's tree into dst (a copy of the bytes where linking is refused). The tree is
 * what an earlier run wrote (kernels/ and its files: a few levels); a deeper one is not ours and is
 * refused at FA_OUTDIR_KEEP_DEPTH levels, naming the folder (a crafted chain 1,500 folders deep
 * overflowed the stack of this recursion). Paths are built to their length, never cut. */
#define FA_OUTDIR_KEEP_DEPTH 32
static fa_status link_tree(fa_ctx *ctx, const char *src, const char *dst, int depth)
{
    if (depth > FA_OUTDIR_KEEP_DEPTH)
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: folders nested more than %d deep in the output folder, which fuse-advise never writes: "
                            "remove them or name another output folder",
                            src, FA_OUTDIR_KEEP_DEPTH);
    DIR *d = opendir(src);
    if (!d) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot read: %s", src, strerror(errno));
    fa_status s = FA_OK;
    struct dirent *e;
    while (!s && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t na = strlen(src) + strlen(e->d_name) + 2, nb = strlen(dst) + strlen(e->d_name) + 2;
        char *a = malloc(na), *b = malloc(nb);
        if (!a || !b) {
            free(a);
            free(b);
            s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(a, na, "%s/%s", src, e->d_name);
        snprintf(b, nb, "%s/%s", dst, e->d_name);
        struct stat sb;
        if (lstat(a, &sb) == 0) {
            if (S_ISDIR(sb.st_mode)) {
                if (mkdir(b, 0755) != 0 && errno != EEXIST) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: mkdir: %s", b, strerror(errno));
                if (!s) s = link_tree(ctx, a, b, depth + 1);
            } else if (S_ISREG(sb.st_mode) && link(a, b) != 0) {
                uint8_t *data = NULL;
                size_t n = 0;
                s = fa_read_file(ctx, a, &data, &n);
                if (!s) s = fa_write_file_atomic(ctx, b, data, n);
                free(data);
            }
        }
        free(a);
        free(b);
    }
    closedir(d);
    return s;
}

fa_status fa_outdir_begin(fa_ctx *ctx, const char *path, const char *const *own_names, bool keep_existing,
                          fa_outdir **out)
{
    fa_status s = fa_outdir_check(ctx, path, own_names);
    if (s) return s;
    fa_outdir *o = calloc(1, sizeof *o);
    if (!o) return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    o->own_names = own_names;
    /* strip trailing slashes; a link to a folder is followed (the link itself stays) */
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (size_t n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--) buf[n - 1] = 0;
    struct stat sb;
    o->existed = stat(buf, &sb) == 0;
    o->final = o->existed ? realpath(buf, NULL) : strdup(buf);
    if (!o->final) {
        free(o);
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: %s", path, strerror(errno));
    }
    char *d = strdup(o->final), *b = strdup(o->final);
    if (!d || !b) {
        free(d);
        free(b);
        fa_outdir_abort(o);
        return fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
    }
    const char *parent = dirname(d), *base = basename(b);
    if (!strcmp(base, ".") || !strcmp(base, "..") || !strcmp(base, "/")) s = fa_ctx_error(ctx, FA_ERR_INPUT, "%s: not a folder name fuse-advise can replace", path);
    if (!s && !mkdirs(parent))
        s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create the folder it goes in: %s", path, strerror(errno));
    if (!s) {
        sweep_stale(parent, base);
        size_t n = strlen(parent) + strlen(base) + 64;
        o->stage = malloc(n);
        if (!o->stage) s = fa_ctx_error(ctx, FA_ERR_NOMEM, "out of memory");
        else snprintf(o->stage, n, "%s/.%s.fa-staging.%ld", parent, base, (long)getpid());
    }
    free(d);
    free(b);
    if (!s) {
        fa_rm_tree(o->stage);
        if (mkdir(o->stage, 0755) != 0)
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create the staging folder %s: %s", path, o->stage, strerror(errno));
    }
    if (!s && keep_existing && o->existed) s = link_tree(ctx, o->final, o->stage, 0);
    if (!s) {
        char m[8192];
        snprintf(m, sizeof m, "%s/%s", o->stage, MARKER);
        static const char text[] = MARKER_TEXT ": this folder is replaced as a whole by the next run\n";
        s = fa_write_file_atomic(ctx, m, text, sizeof text - 1);
    }
    if (s) {
        fa_outdir_abort(o);
        return s;
    }
    *out = o;
    return FA_OK;
}

static void fsync_dir_of(const char *path)
{
    char *d = strdup(path);
    if (!d) return;
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(d);
}

fa_status fa_outdir_commit(fa_ctx *ctx, fa_outdir *o)
{
    fa_status s = FA_OK;
    struct stat sb;
    /* the folder again, as at the start: a file someone put there while the run worked (a note, a
     * kernel) went with the old folder at the swap (the sixth attack pass). Refused, with the new
     * outputs left in the staging folder, named. */
    if (lstat(o->final, &sb) == 0 && fa_outdir_check(ctx, o->final, o->own_names)) {
        s = fa_ctx_wrap(ctx, FA_ERR_INPUT, "while the run worked, the output folder changed (the new outputs are in %s, "
                        "kept): ", o->stage);
        free(o->stage);
        free(o->final);
        free(o);
        return s;
    }
    if (lstat(o->final, &sb) != 0) {
        if (rename(o->stage, o->final) != 0)
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot move the new outputs into place: %s", o->final, strerror(errno));
    } else if (renameat2(AT_FDCWD, o->stage, AT_FDCWD, o->final, RENAME_EXCHANGE) != 0) {
        /* filesystems without RENAME_EXCHANGE: move the old folder aside first (for a moment
         * neither is at the name; a kill then leaves the old one as .<name>.fa-old.<pid>) */
        if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
            s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot swap in the new outputs: %s", o->final, strerror(errno));
        else {
            char old[8192];
            char *d = strdup(o->final), *b = strdup(o->final);
            snprintf(old, sizeof old, "%s/.%s.fa-old.%ld", d ? dirname(d) : ".", b ? basename(b) : "out", (long)getpid());
            free(d);
            free(b);
            if (rename(o->final, old) != 0)
                s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot move the previous outputs aside: %s", o->final, strerror(errno));
            else if (rename(o->stage, o->final) != 0) {
                s = fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot move the new outputs into place: %s", o->final, strerror(errno));
                rename(old, o->final);
            } else {
                fa_rm_tree(old);
            }
        }
    }
    /* after the swap the staging name holds the previous folder */
    if (!s) fsync_dir_of(o->final);
    fa_rm_tree(o->stage);
    free(o->stage);
    free(o->final);
    free(o);
    return s;
}

void fa_outdir_abort(fa_outdir *o)
{
    if (!o) return;
    if (o->stage) fa_rm_tree(o->stage);
    free(o->stage);
    free(o->final);
    free(o);
}

/* ---- compiler output ---- */

int fa_compiler_diagnostics(fa_buf *out, const char *log, size_t len, const char *unit, size_t cap)
{
    size_t ul = strlen(unit), used = 0;
    int kept = 0, more = 0;
    const char *p = log, *end = log + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        /* FILE:LINE[:COL]: ... (gcc, clang) or FILE(LINE): ... (NVRTC); FILE's last component
         * must be the unit, and it must be the whole component */
        const char *q = p;
        while (q < eol && *q != ':' && *q != '(') q++;
        bool ours = q < eol && q - p >= (ptrdiff_t)ul && !memcmp(q - ul, unit, ul) &&
                    (q - p == (ptrdiff_t)ul || q[-(ptrdiff_t)ul - 1] == '/') && q + 1 < eol && q[1] >= '0' && q[1] <= '9';
        if (ours) {
            if (kept < 8 && used < cap) {
                if (kept) fa_buf_puts(out, "; ");
                for (const char *c = q - ul; c < eol && used < cap; c++, used++) {
                    unsigned char ch = (unsigned char)*c;
                    fa_buf_append(out, ch < 0x20 || ch == 0x7f ? "?" : c, 1);
                }
                if (used >= cap) fa_buf_puts(out, "...");
                kept++;
            } else {
                more++;
            }
        }
        p = eol + 1;
    }
    if (more) fa_buf_printf(out, " (%d more diagnostic line%s)", more, more == 1 ? "" : "s");
    return kept;
}

/* ---- private temporary folders ---- */

fa_status fa_private_tmpdir(fa_ctx *ctx, const char *prefix, const char *name, int *dir_fd, char *path_buf, size_t cap,
                            char *made, size_t made_cap)
{
    *dir_fd = -1;
    const char *dir = getenv("TMPDIR");
    if (!dir || dir[0] != '/') dir = "/tmp"; /* a relative TMPDIR is ignored (XDG Base Directory's rule) */
    if ((size_t)snprintf(made, made_cap, "%s/%sXXXXXX", dir, prefix) >= made_cap)
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: TMPDIR too long for a temporary folder", dir);
    if (!mkdtemp(made)) return fa_ctx_error(ctx, FA_ERR_IO, "cannot create a temporary folder in %s: %s", dir, strerror(errno));
    int fd = open(made, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat sb;
    /* the folder mkdtemp made: ours, 0700 (swapped before the open: refused) */
    if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_uid != geteuid() || (sb.st_mode & 077)) {
        fa_status s = fa_ctx_error(ctx, FA_ERR_IO, "%s: the temporary folder just made is not ours and private: refusing it", made);
        if (fd >= 0) close(fd);
        return s;
    }
    if ((size_t)snprintf(path_buf, cap, "/proc/self/fd/%d/%s", fd, name) >= cap) {
        close(fd);
        rmdir(made);
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: name too long", name);
    }
    *dir_fd = fd;
    return FA_OK;
}

void fa_private_tmpdir_remove(int dir_fd, const char *name, const char *made)
{
    if (dir_fd < 0) return;
    unlinkat(dir_fd, name, 0);
    rmdir(made); /* emptied: ours; anything else there (someone renamed it) is not removed */
    close(dir_fd);
}
