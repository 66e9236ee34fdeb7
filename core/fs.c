/* core/fs — output files and folders: the atomic file writer (never replaces what is not a
 * regular file), output folders written into a staging folder and swapped in whole, same-file
 * checks, and file names derived from input names. docs/hardening.md "Output files". */
#include "core.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* PATH.tmp.<pid> (O_EXCL, never through a planted link), fsync, rename over PATH. */
static fa_status write_replace(fa_ctx *ctx, const char *shown, const char *path, const void *data, size_t len,
                               mode_t mode)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: path too long", shown);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST) { /* left by a killed writer with our pid */
        unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    }
    if (fd < 0) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot create: %s", shown, strerror(errno));
    fa_status s = write_all(ctx, fd, shown, data, len);
    if (!s && fsync(fd) != 0 && errno != EINVAL) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: fsync failed: %s", shown, strerror(errno));
    if (close(fd) != 0 && !s) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: close failed: %s", shown, strerror(errno));
    if (!s && rename(tmp, path) != 0) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: rename failed: %s", shown, strerror(errno));
    if (s) unlink(tmp);
    return s;
}

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m)) return "a folder";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}

fa_status fa_write_file_atomic(fa_ctx *ctx, const char *path, const void *data, size_t len)
{
    struct stat lsb, sb;
    if (lstat(path, &lsb) != 0) {
        if (errno != ENOENT) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        return write_replace(ctx, path, path, data, len, 0644);
    }
    if (S_ISREG(lsb.st_mode)) return write_replace(ctx, path, path, data, len, lsb.st_mode & 07777);
    sb = lsb;
    if (S_ISLNK(lsb.st_mode) && stat(path, &sb) != 0)
        return fa_ctx_error(ctx, FA_ERR_IO, "%s: a symbolic link whose target does not exist: not replaced", path);
    if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)) return write_through(ctx, path, data, len);
    if (S_ISREG(sb.st_mode)) {
        /* a link to a regular file: replace the target atomically, the link stays a link */
        char *real = realpath(path, NULL);
        if (!real) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot resolve the link: %s", path, strerror(errno));
        fa_status s = write_replace(ctx, path, real, data, len, sb.st_mode & 07777);
        free(real);
        return s;
    }
    return fa_ctx_error(ctx, FA_ERR_IO, "%s: is %s, refusing to write over it", path, kind_of(sb.st_mode));
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

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP) rmdir(p);
    else unlink(p);
    return 0;
}

void fa_rm_tree(const char *path)
{
    struct stat sb;
    if (!path || lstat(path, &sb) != 0) return;
    if (!S_ISDIR(sb.st_mode)) {
        unlink(path);
        return;
    }
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- output folders ---- */

#define MARKER ".fuse-advise-out"

struct fa_outdir {
    char *final; /* the folder the user named (a link to a folder: its target) */
    char *stage; /* PARENT/.<name>.fa-staging.<pid> */
    bool existed;
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
        fa_rm_tree(p);
    }
    closedir(d);
}

fa_status fa_outdir_check(fa_ctx *ctx, const char *path, const char *const *own_names)
{
    if (!path || !*path) return fa_ctx_error(ctx, FA_ERR_USAGE, "empty output folder name");
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
    char foreign[256] = "";
    bool marked = false;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!strcmp(e->d_name, MARKER)) {
            marked = true;
            continue;
        }
        bool own = false;
        for (int i = 0; own_names && own_names[i] && !own; i++) own = !strcmp(e->d_name, own_names[i]);
        if (!own && !foreign[0]) snprintf(foreign, sizeof foreign, "%s", e->d_name);
    }
    closedir(d);
    if (!marked && foreign[0])
        return fa_ctx_error(ctx, FA_ERR_INPUT,
                            "%s: holds '%s', which fuse-advise did not write; the output folder is replaced as a "
                            "whole, so name a new or empty folder (or one fuse-advise wrote)",
                            path, foreign);
    return FA_OK;
}

/* Hard links of src's tree into dst (a copy of the bytes where linking is refused). */
static fa_status link_tree(fa_ctx *ctx, const char *src, const char *dst)
{
    DIR *d = opendir(src);
    if (!d) return fa_ctx_error(ctx, FA_ERR_IO, "%s: cannot read: %s", src, strerror(errno));
    fa_status s = FA_OK;
    struct dirent *e;
    while (!s && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char a[8192], b[8192];
        snprintf(a, sizeof a, "%s/%s", src, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
        struct stat sb;
        if (lstat(a, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) {
            if (mkdir(b, 0755) != 0 && errno != EEXIST) s = fa_ctx_error(ctx, FA_ERR_IO, "%s: mkdir: %s", b, strerror(errno));
            if (!s) s = link_tree(ctx, a, b);
        } else if (S_ISREG(sb.st_mode) && link(a, b) != 0) {
            uint8_t *data = NULL;
            size_t n = 0;
            s = fa_read_file(ctx, a, &data, &n);
            if (!s) s = fa_write_file_atomic(ctx, b, data, n);
            free(data);
        }
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
    if (!s && keep_existing && o->existed) s = link_tree(ctx, o->final, o->stage);
    if (!s) {
        char m[8192];
        snprintf(m, sizeof m, "%s/%s", o->stage, MARKER);
        static const char text[] = "written by fuse-advise: this folder is replaced as a whole by the next run\n";
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
