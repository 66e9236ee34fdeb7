/* core — status codes, error context, arena, string buffer, escaping, logging hook.
 * Every other module includes this header; it depends on nothing but libc. */
#ifndef FA_CORE_H
#define FA_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FA_VERSION_STRING "0.1.0"

/* Status of every fallible function. The detailed message lives on the fa_ctx.
 * Values map to process exit codes through fa_status_exit_code(). */
typedef enum fa_status {
    FA_OK = 0,
    FA_ERR_INPUT,       /* bad input file / model / trace: exit 1 */
    FA_ERR_UNSUPPORTED, /* valid input we cannot handle (unknown op, ...): exit 1 */
    FA_ERR_IO,          /* filesystem or database I/O: exit 1 */
    FA_ERR_NOMEM,       /* allocation failed or over a declared limit: exit 1 */
    FA_ERR_RUNTIME,     /* execution / compile / library failure: exit 1 */
    FA_ERR_USAGE,       /* command-line usage error: exit 2 */
    FA_ERR_GATE,        /* CI gate found a regression: exit 3 */
    FA_ERR_INTERNAL,    /* programmer error surfaced as a status: exit 1 */
    FA_STATUS_COUNT
} fa_status;

const char *fa_status_name(fa_status s);
int fa_status_exit_code(fa_status s);

/* Error context: holds the last error message (like sqlite3's db->zErrMsg).
 * One per thread of work; library code never prints, it records here. */
typedef struct fa_ctx fa_ctx;

typedef void (*fa_log_fn)(void *user, int level, const char *msg);
enum { FA_LOG_ERROR = 0, FA_LOG_WARN = 1, FA_LOG_INFO = 2, FA_LOG_DEBUG = 3 };

fa_ctx *fa_ctx_create(void);
void fa_ctx_free(fa_ctx *ctx);
/* Record an error and return `s` (so callers can `return fa_ctx_error(...)`). */
fa_status fa_ctx_error(fa_ctx *ctx, fa_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepend context ("file.onnx: ") to the current message, keeps status. */
fa_status fa_ctx_wrap(fa_ctx *ctx, fa_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Why the current error happened, where a caller acts on its kind rather than its words (cli/
 * chooses its hint by it, fa_cli_fail). Set by the function that knows, after its fa_ctx_error;
 * fa_ctx_error and fa_ctx_clear reset it to NONE, fa_ctx_wrap keeps it. */
typedef enum fa_err_reason {
    FA_REASON_NONE = 0,
    FA_REASON_DEVICE_UNAVAILABLE, /* the target's device or driver is not here (no libcuda, cuInit
                                     failed, no such device) */
    FA_REASON_NO_EXECUTOR,        /* this build has no executor for the target (built without it) */
    FA_REASON_COUNT
} fa_err_reason;
/* Set the current error's reason; returns the current status (so `return fa_ctx_reason_set(...)`
 * after an fa_ctx_error keeps its status). */
fa_status fa_ctx_reason_set(fa_ctx *ctx, fa_err_reason r);
fa_err_reason fa_ctx_reason(const fa_ctx *ctx); /* FA_REASON_NONE without an error or ctx */
/* Last message; valid until the next fa_ctx_error/fa_ctx_clear. Never NULL. */
const char *fa_ctx_errmsg(const fa_ctx *ctx);
fa_status fa_ctx_status(const fa_ctx *ctx);
void fa_ctx_clear(fa_ctx *ctx);
/* Logging hook: library code reports progress/warnings here; cli/ installs the sink. */
void fa_ctx_set_log(fa_ctx *ctx, fa_log_fn fn, void *user, int max_level);
void fa_log(fa_ctx *ctx, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Arena: bump allocator for per-graph / per-run data, freed at once. */
typedef struct fa_arena fa_arena;
fa_arena *fa_arena_create(size_t block_bytes);
void fa_arena_free(fa_arena *a);
/* 16-byte aligned, zeroed. Returns NULL on overflow/OOM. */
void *fa_arena_alloc(fa_arena *a, size_t bytes);
char *fa_arena_strdup(fa_arena *a, const char *s);
char *fa_arena_strndup(fa_arena *a, const char *s, size_t n);
size_t fa_arena_used(const fa_arena *a);

/* Growable byte/string buffer (heap). */
typedef struct fa_buf {
    char *data; /* NUL-terminated while len < cap */
    size_t len;
    size_t cap;
    bool oom; /* set once an allocation failed; further appends are dropped */
} fa_buf;
void fa_buf_init(fa_buf *b);
void fa_buf_free(fa_buf *b);
void fa_buf_reset(fa_buf *b);
void fa_buf_append(fa_buf *b, const void *p, size_t n);
void fa_buf_puts(fa_buf *b, const char *s);
void fa_buf_printf(fa_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fa_buf_vprintf(fa_buf *b, const char *fmt, va_list ap);

/* Escaping for each output format. Each appends the escaped form of s[0..n) to b.
 * JSON: RFC 8259 string body (no quotes); invalid UTF-8 bytes become U+FFFD.
 * HTML: & < > " ' as entities (safe in text and quoted attributes).
 * DOT:  body of a double-quoted ID ("\" and backslash escaped, newline as \n).
 * CSV:  control, C1 and line-reordering characters escaped first as fa_escape_term writes them
 *       (a CSV file is read on a terminal too), then an RFC 4180 field, quoted when needed; a field
 *       starting with = + - or @ (a spreadsheet formula) is quoted with a ' before it, as OWASP's
 *       "CSV Injection" page recommends (a tab or CR before it is already an escape). */
/* Length (1..4) of the valid UTF-8 sequence starting s[0..n), 0 where the bytes there are not
 * valid UTF-8 (RFC 3629: no overlong form, no surrogate, nothing past U+10FFFF) or n is 0. */
size_t fa_utf8_seq_len(const char *s, size_t n);
/* Whether the valid UTF-8 sequence s[0..l) (fa_utf8_seq_len's length) is a character no text
 * surface shows as itself: a C1 control, a bidi control (U+061C, U+200E/F, U+202A-202E,
 * U+2066-2069), U+2028/2029 or U+FEFF. Every escaper replaces or escapes it. */
bool fa_utf8_disguising(const char *s, size_t l);
void fa_escape_json(fa_buf *b, const char *s, size_t n);
void fa_escape_html(fa_buf *b, const char *s, size_t n);
void fa_escape_dot(fa_buf *b, const char *s, size_t n);
void fa_escape_csv(fa_buf *b, const char *s, size_t n);
/* Terminal and log text (docs/hardening.md "Output from stored data"): every control character
 * is written as a visible escape, so no input string can move the cursor, clear the screen, set
 * the window title, write the clipboard (OSC 52) or forge a line: C0 bytes as \n, \t, \r or
 * \xNN (ESC is \x1b), DEL as \x7f, C1 controls (U+0080..U+009F) and the characters that
 * reorder or break lines (U+200E/F, U+2028/9, U+202A..E, U+2066..9) as \uNNNN, bytes that are not
 * valid UTF-8 as \xNN (a lone 0x9B is CSI to an 8-bit terminal). Backslashes stay as they are, so
 * escaping twice changes nothing. Other valid UTF-8 is kept. */
void fa_escape_term(fa_buf *b, const char *s, size_t n);
/* The same for a whole text whose line structure is the writer's own (a report printed to the
 * terminal): newline and tab kept, everything else escaped as fa_escape_term does. */
void fa_escape_term_text(fa_buf *b, const char *s, size_t n);
/* fa_buf_printf where every %s (and %c) argument goes through fa_escape_term: the format's own
 * text (newlines included) is kept, what an argument holds can never control a terminal. Width
 * and precision of %s apply as in printf (precision cuts the argument before escaping, width pads
 * the escaped text). The error context (fa_ctx_error, fa_ctx_wrap) and fa_log format with it, and
 * cli/ prints every string from an input through it. */
void fa_buf_printf_term(fa_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fa_buf_vprintf_term(fa_buf *b, const char *fmt, va_list ap);

/* The one JSON value writer (RFC 8259): fa_json_str writes s as a quoted, escaped string, NULL as
 * null; fa_json_str_or_empty writes NULL as "". fa_json_num writes v with `sig_digits`
 * significant digits (%.*g), and null for NaN, infinities and |v| > 1e300 (JSON has no
 * non-finite numbers). */
void fa_json_str(fa_buf *b, const char *s);
void fa_json_str_or_empty(fa_buf *b, const char *s);
void fa_json_num(fa_buf *b, double v, int sig_digits);
/* Significant digits for a time in nanoseconds written to JSON: 1 ns resolution up to 10 s, so a
 * consumer that rounds it (to µs or ms) gets what the text surfaces print from the same stored
 * double; 6 digits lost up to 1 µs at a second's scale. */
#define FA_JSON_NS_DIGITS 10

/* Checked size arithmetic: return false on overflow, *out untouched then. */
bool fa_mul_size(size_t a, size_t b, size_t *out);
bool fa_add_size(size_t a, size_t b, size_t *out);
/* The same for int64 (shapes, dims, attribute values from a model): false on overflow, *out
 * untouched then (GCC/Clang __builtin_*_overflow; never undefined behaviour). Every shape rule
 * (graph/ops_*.c) goes through these, by way of fa_dim_add/sub/mul (graph/ops-impl.h), which name
 * the node and the field when they fail. */
bool fa_i64_add(int64_t a, int64_t b, int64_t *out);
bool fa_i64_sub(int64_t a, int64_t b, int64_t *out);
bool fa_i64_mul(int64_t a, int64_t b, int64_t *out);
/* Saturating unsigned arithmetic (UINT64_MAX on overflow) for figures that are shown and compared,
 * never allocated: FLOPs and bytes of an op (fa_op_cost). */
uint64_t fa_u64_add_sat(uint64_t a, uint64_t b);
uint64_t fa_u64_mul_sat(uint64_t a, uint64_t b);
/* A double as int64_t, truncated toward zero and saturated: NaN -> 0, values at or beyond the
 * range -> INT64_MIN / INT64_MAX. C leaves a float-to-integer conversion out of the target's
 * range undefined (C11 6.3.1.4p1), and every double here may come from an input (a model's
 * tensor, an attribute, a trace or database field), so no such conversion is written as a cast. */
int64_t fa_f64_to_i64_sat(double v);

/* Monotonic clock in ns (CLOCK_MONOTONIC). */
uint64_t fa_now_ns(void);

/* Warm-up by time. A measurement's untimed warm-up iterations (`--warmup W`) default to
 * FA_WARMUP_AUTO: at least one, then more while they have taken under FA_WARMUP_AUTO_MIN_S, at
 * most FA_WARMUP_AUTO_MAX (the fixed count every measurement used before). Why one is enough for a
 * long iteration: an executor's activations are allocated and touched, and oneDNN's kernels
 * generated, when it is created (runtime.h, fa_exec_create), so what its first run still warms is
 * caches, TLBs and the thread pool — which one run of 0.25 s or more has done; a fixed count of 3
 * made a 24-layer GPT-2's end-to-end check spend 3 of its 9 model pairs warming up (issue 39). The
 * same idea as Google Benchmark's --benchmark_min_warmup_time. W >= 0 given by the user is taken
 * exactly. fa_warmup_more: whether to run another warm-up iteration after `done` of them took
 * `spent_ns` in all. */
#define FA_WARMUP_AUTO (-1)
#define FA_WARMUP_AUTO_MAX 3
#define FA_WARMUP_AUTO_MIN_S 0.25
bool fa_warmup_more(int warmup, int done, uint64_t spent_ns);

/* ---- input files (core/fs.c, docs/hardening.md "Files that are not files") ---- */

/* Open PATH for reading, refusing what is not a regular file before open(2) could block on it:
 * the type is taken with stat(2) first (a FIFO, a device, a socket or a folder is refused,
 * FA_ERR_INPUT naming PATH and what it is), then the file is opened O_NONBLOCK and checked
 * again with fstat(2) (swapped in between: refused), then O_NONBLOCK is cleared.
 * FA_INPUT_PIPE_OK: an anonymous pipe (a shell's `|` as /dev/stdin, `<(command)`) is accepted
 * too - its writer is a process the user started; a named FIFO never is (nobody may ever open
 * it for writing). *out_fd: the caller closes it. */
enum { FA_INPUT_PIPE_OK = 1u << 0 };
fa_status fa_open_input(fa_ctx *ctx, const char *path, unsigned flags, int *out_fd);
/* PATH is absent or a regular file (not a link, FIFO, device...): for files another library
 * opens by name next to an input, such as SQLite's. FA_ERR_INPUT naming PATH otherwise. */
fa_status fa_input_regular_or_absent(fa_ctx *ctx, const char *path);
/* DB-journal, DB-wal and DB-shm (next to DB and, for a linked DB, next to its target) are
 * absent or regular files: SQLite opens them by name and a FIFO there blocks it forever. */
fa_status fa_sqlite_companions_check(fa_ctx *ctx, const char *db_path);
/* After a database at path was opened and closed: remove the -wal (only an empty one) and -shm
 * that SQLite made while it was open, i.e. that did not exist before (wal_before, shm_before),
 * are regular files of ours, and while no other process holds a lock on the database or its
 * -shm (that process may have made them). Best effort, never an error. */
void fa_sqlite_remove_created(const char *path, bool wal_before, bool shm_before);
/* FA_ERR_IO naming PATH when it is a symbolic link owned by neither you (the effective uid) nor
 * root: such a link was planted in a folder its owner can write and chose where a write (or a
 * database) goes, so it is not followed — the rule of the kernel's fs.protected_symlinks for
 * sticky folders, applied everywhere. verb says what would have been done ("write through",
 * "open the run database through"). FA_OK otherwise (no link, your own, root's, absent). */
fa_status fa_link_owner_check(fa_ctx *ctx, const char *path, const char *verb);
/* A private temporary folder for a file that another library must open by name: made 0700 by
 * mkdtemp(3) under $TMPDIR when that is an absolute path, else /tmp, and held open (*dir_fd), so
 * the name handed out, "/proc/self/fd/DIRFD/NAME" (written into path_buf, at most cap bytes),
 * resolves through our descriptor to that very folder even if someone renames or replaces the
 * folder's entry in a shared $TMPDIR. *made (at most made_cap bytes) is the folder's path, for
 * fa_private_tmpdir_remove. Errors: FA_ERR_IO naming the folder. */
fa_status fa_private_tmpdir(fa_ctx *ctx, const char *prefix, const char *name, int *dir_fd, char *path_buf, size_t cap,
                            char *made, size_t made_cap);
/* Remove NAME in the folder, then the folder (by its descriptor's entry; an emptied folder only),
 * and close the descriptor. */
void fa_private_tmpdir_remove(int dir_fd, const char *name, const char *made);
/* PATH as SQLite must be given it to open that very file: a relative path gets "./" in front,
 * so that "file:x.db?vfs=..." or ":memory:" (which SQLite reads as a URI or an in-memory
 * database; Debian builds it with URIs on) is the file of that name that every check before the
 * open looked at. An absolute path is returned as is. Writes at most cap bytes to buf; NULL
 * when it does not fit. */
const char *fa_sqlite_literal_path(const char *path, char *buf, size_t cap);
/* "file:PATH?immutable=1" with the URI's reserved bytes of PATH percent-encoded (SQLite docs,
 * "Uniform Resource Identifiers"), for opening a finished file read-only with SQLITE_OPEN_URI: no
 * locks, no -wal/-shm made beside it. Only where no PATH-wal exists (its content would be
 * ignored). malloc'd; NULL on OOM. */
char *fa_sqlite_immutable_uri(const char *path);

/* ---- shared byte buffers (core/blob.c, docs/runtime.md "Weights once in memory") ----
 * A blob is a reference-counted byte buffer: a heap allocation, a read-only mapping of a whole
 * file, or a slice of another blob. Graphs hold their constant tensors' bytes in blobs, so a copy
 * of a graph (the fused plan's, a cluster's sub-graph) shares the bytes instead of copying them,
 * and a model's weights can stay in the file's page cache (mapped) instead of in memory of our
 * own. A blob's bytes never change after it is filled: share, never write.
 *
 * A blob also keeps its derived copies: the same bytes rearranged (a library's blocked layout of
 * a weight), made once per key by the first caller that asks (fa_blob_derived) and freed with the
 * blob, so every executor over every graph that shares the blob shares them too.
 *
 * Thread safety: references and derived copies may be taken from any thread (atomic count, one
 * lock per blob); the bytes are read-only. */
typedef struct fa_blob fa_blob;
/* nbytes of fresh memory, 64-byte aligned, uninitialised (fill it before sharing). NULL on OOM. */
fa_blob *fa_blob_alloc(size_t nbytes);
/* Adopts data (malloc'd or posix_memalign'd; freed with free() with the last reference). NULL on
 * OOM (data is then freed). */
fa_blob *fa_blob_adopt(void *data, size_t nbytes);
/* The whole regular file open as fd, mapped read-only and private (mmap PROT_READ, MAP_PRIVATE);
 * `shown` names it in messages. The caller keeps fd (close it whenever: the mapping stays). A
 * file truncated by someone else while mapped raises SIGBUS when a lost page is read: the process
 * then writes one line naming `shown` and the byte, and exits 1 (core/blob.c's handler; any
 * other SIGBUS keeps its default action). Errors: FA_ERR_IO naming shown. */
fa_status fa_blob_map_file(fa_ctx *ctx, int fd, const char *shown, fa_blob **out);
/* nbytes at offset in parent, holding a reference to parent; offset + nbytes within it (else
 * NULL, as on OOM). */
fa_blob *fa_blob_slice(fa_blob *parent, size_t offset, size_t nbytes);
const void *fa_blob_data(const fa_blob *b);
size_t fa_blob_size(const fa_blob *b);
/* The bytes lie in a mapping of a file (a slice of a mapped blob included). */
bool fa_blob_mapped(const fa_blob *b);
/* One more reference (returns b; NULL: NULL). */
fa_blob *fa_blob_ref(fa_blob *b);
/* One reference less; the last frees the bytes (or unmaps the file) and every derived copy.
 * NULL: no-op. */
void fa_blob_unref(fa_blob *b);
/* For a mapped blob: drop its pages from this process's resident set (madvise MADV_DONTNEED on
 * the pages it spans). Nothing is lost: a read faults the page in again from the page cache (or
 * the file). For bytes the run read once (the walk over a model file, a weight now held in a
 * derived copy). A heap blob: nothing. */
void fa_blob_release_pages(const fa_blob *b);
/* The derived copy of b under key[0..key_len) (the caller's description of the arrangement: two
 * keys with the same bytes must mean the same copy), nbytes long, 64-byte aligned: made by
 * make(user, ctx, src = b's bytes, dst, nbytes) the first time the key is asked for, then shared.
 * *out valid while b lives. Errors: make's, FA_ERR_NOMEM. */
typedef fa_status (*fa_blob_make_fn)(void *user, fa_ctx *ctx, const void *src, void *dst, size_t nbytes);
fa_status fa_blob_derived(fa_ctx *ctx, fa_blob *b, const void *key, size_t key_len, size_t nbytes, fa_blob_make_fn make,
                          void *user, const void **out);
/* Derived copies made from b so far (a second request for a key makes none): for tests. */
int fa_blob_derived_count(const fa_blob *b);
/* A reference for a reader of b's bytes at data: when data is one of b's derived copies
 * (fa_blob_derived) the reader is counted as a derived reader until fa_blob_unref_reader(b, data)
 * drops the reference again (each reference taken here is dropped there, with the same data). */
fa_blob *fa_blob_ref_reader(fa_blob *b, const void *data);
void fa_blob_unref_reader(fa_blob *b, const void *data);
/* Free a heap blob's plain bytes once nothing can read them: b has a derived copy, exactly
 * want_readers derived readers (fa_blob_ref_reader), and no reference but theirs and one more (the
 * owner's, who promises not to read the plain bytes again and calls this). true when freed:
 * fa_blob_data(b) is NULL from then on and a new derived copy is refused (FA_ERR_RUNTIME). A
 * mapped blob or a slice: false (fa_blob_release_pages gives its pages back instead). What
 * `exec` does with weights every consumer reads reordered (fa_exec_options.release_plain_weights). */
bool fa_blob_drop_plain(fa_blob *b, int want_readers);
/* Free b's derived copies that no reader holds (fa_blob_ref_reader), returning their bytes: copies
 * made for executors since freed (`run`'s layout choice measures the model in layouts the plan
 * may not keep, docs/runtime.md "The plan's layout"). A later fa_blob_derived for the same key
 * makes the copy again. Nothing when the plain bytes were dropped (fa_blob_drop_plain: a copy is
 * then the only one). A pointer fa_blob_derived returned and not yet passed to
 * fa_blob_ref_reader is not a reader: call this only when no executor of b's graphs is being
 * created. NULL: 0. */
size_t fa_blob_trim_derived(fa_blob *b);
/* For a heap blob holding its last reference whose bytes start its allocation: the allocation,
 * handed to the caller (free() it), and the blob freed. NULL (blob untouched) otherwise. */
void *fa_blob_take(fa_blob *b);

/* Progress of a long step, for the user (cli/ draws it; library code only calls it): `step`
 * names the step ("load", "verify", ...), `done` of `total` units are finished. */
typedef void (*fa_progress_fn)(void *user, const char *step, int done, int total);

/* Whole-file helpers. fa_read_file: malloc'd buffer (caller frees), +1 NUL byte; the file is
 * opened by fa_open_input (a FIFO or device is refused, never waited on). */
fa_status fa_read_file(fa_ctx *ctx, const char *path, uint8_t **out_data, size_t *out_len);
/* The same, refusing a file over max bytes before anything is read (FA_ERR_INPUT naming the
 * path, its size and `what` the limit is: "a TensorProto (protobuf's 2 GiB)"). */
fa_status fa_read_file_max(fa_ctx *ctx, const char *path, size_t max, const char *what, uint8_t **out_data,
                           size_t *out_len);

/* ---- output files and folders (core/fs.c, docs/hardening.md "Output files") ---- */

/* Write a whole file whose name fuse-advise chose or owns (a report file in an output folder,
 * exec's output_N.pb, plan.json, a kernel source, a cache entry). The folder part of PATH is
 * opened (a link to a folder is followed: whoever named the folder chose it), then, relative
 * to that descriptor, what sits at the last component decides:
 * - missing or a regular file: NAME.tmp.<pid> (O_EXCL|O_NOFOLLOW), fsync, renameat(2) over
 *   NAME in the same folder; on failure the temp file is removed and the file keeps its
 *   previous content (or stays absent); an existing file keeps its mode; a hard link there is
 *   replaced by the new file, its other names keep the old bytes;
 * - a symbolic link (fuse-advise never creates one), FIFO, device, socket or folder: FA_ERR_IO
 *   naming PATH, nothing written, nothing followed. */
fa_status fa_write_file_atomic(fa_ctx *ctx, const char *path, const void *data, size_t len);
/* fa_write_file_atomic of the concatenation of parts[0..n) (a part with data NULL: len zero
 * bytes), written part by part: a file of several GB (external data) is never one buffer. */
typedef struct fa_write_part {
    const void *data;
    size_t len;
} fa_write_part;
fa_status fa_write_file_parts_atomic(fa_ctx *ctx, const char *path, const fa_write_part *parts, int n);
/* The same in the folder dirfd (a descriptor the caller holds): NAME is one component; shown is
 * the path messages name. */
fa_status fa_write_file_at(fa_ctx *ctx, int dirfd, const char *name, const char *shown, const void *data, size_t len);
/* Write a file whose exact path the user named on the command line (`zoo -o FILE`, `gate
 * --junit FILE`): as fa_write_file_atomic, except that what the user named is honoured:
 * - a symbolic link owned by the user or root: a link to a regular file has its target
 *   replaced the same way (the link stays); a link owned by anyone else is refused (FA_ERR_IO):
 *   whoever made it chose the target;
 * - a character device or FIFO, or such a link to one (a terminal, /dev/null, a pipe,
 *   /dev/stdout): written through;
 * - a folder, block device, socket or dangling link: FA_ERR_IO naming PATH, nothing written. */
fa_status fa_write_user_file(fa_ctx *ctx, const char *path, const void *data, size_t len);
/* a and b name the same file: same device and inode when both exist, else the same path once
 * the folders are resolved (realpath of the folder + the last component). */
bool fa_path_same_file(const char *a, const char *b);
/* path is dir or lies below it (both resolved as fa_path_same_file does). */
bool fa_path_inside(const char *dir, const char *path);
/* A file or folder name derived from an input name (a model's file name): bytes other than
 * [A-Za-z0-9_+-.] and a leading '.' become '_' (so "..", "a/b", ".hidden" cannot name another
 * place), at most 100 bytes. Writes out (cap bytes) and returns it; "" when in is empty. */
const char *fa_sanitize_file_name(const char *in, char *out, size_t cap);
/* Remove a file or a folder tree (no links followed); errors ignored. */
void fa_rm_tree(const char *path);
/* The same for NAME in the folder dirfd, every step relative to descriptors. */
void fa_rm_tree_at(int dirfd, const char *name);

/* ---- private folders (core/fs.c, docs/hardening.md "Private folders") ---- */

/* Open the folder PATH (absolute) for keeping what will be trusted later (code to load), so
 * that nobody else can swap it or anything on its way. Every component from "/" is opened with
 * openat(O_NOFOLLOW) from the one before and checked on the descriptor:
 * - a folder on the way must be owned by us or root and writable by nobody else, unless it is
 *   sticky (like /tmp, mode 1777: others may add entries but not rename or remove ours);
 * - the folder itself must be ours and writable by nobody else (FA_DIR_STICKY_OK: it may be a
 *   sticky folder like /tmp instead; the caller then makes its own entry with fa_mkdtemp_at);
 * - a symbolic link is followed only in a folder nobody but us and root can write (so one of
 *   them made it), and its target is walked and checked the same way (at most 40 links);
 * - FA_DIR_CREATE: missing folders are created 0700 (mkdirat) and checked like the others.
 * Refusals are FA_ERR_IO "PATH: WHAT: COMPONENT is ...: refusing to use it HINT". *out_fd: the
 * folder (O_RDONLY|O_DIRECTORY); every later step should be relative to it (openat, mkdirat,
 * renameat, unlinkat, fchdir), so a swap of names after the check changes nothing. */
enum { FA_DIR_CREATE = 1u << 0, FA_DIR_STICKY_OK = 1u << 1 };
fa_status fa_private_dir_open(fa_ctx *ctx, const char *path, unsigned flags, const char *what, const char *hint,
                              int *out_fd);
/* A new folder PREFIX<12 random hex digits> in dirfd, mode 0700, opened (O_NOFOLLOW) and
 * checked to be ours: its name in name[cap], its descriptor in *out_fd. shown_dir: dirfd's
 * path for messages. */
fa_status fa_mkdtemp_at(fa_ctx *ctx, int dirfd, const char *shown_dir, const char *prefix, char *name, size_t cap,
                        int *out_fd);

/* Split a command line held in an environment variable (CC="ccache gcc") into words as a POSIX
 * shell does for quoting only (POSIX.1-2017 XCU 2.2 Quoting, 2.6.5 Field Splitting): blanks
 * separate words; '...' keeps everything literally; "..." keeps everything but \ before
 * $ ` " \ or a newline; \ outside quotes keeps the next byte. Nothing is expanded ($VAR, `...`,
 * ~, * stay as written) and nothing is run by a shell. *out_argv: malloc'd NULL-terminated
 * vector (free with fa_words_free), *out_n words (0 for an empty line). An unterminated quote
 * is FA_ERR_USAGE naming `what`. */
fa_status fa_split_words(fa_ctx *ctx, const char *line, const char *what, char ***out_argv, int *out_n);
void fa_words_free(char **argv);

/* An output folder written as a whole: everything goes into a staging folder next to it
 * (PARENT/.<name>.fa-staging.<pid>), then fa_outdir_commit swaps it in with one
 * renameat2(RENAME_EXCHANGE) and removes the previous folder, so at any moment - a kill, a
 * failure, a full disk - the folder is either the previous run's or the new one's, and holds
 * no *.tmp files. Staging folders of dead processes are removed by the next begin. The folder
 * gets a marker file ".fuse-advise-out"; an existing folder without it is accepted only when
 * empty, since it is replaced as a whole: files that merely carry fuse-advise's names (a user's
 * own report.html, a kernels/ of hand-written kernels) would be lost with it. own_names
 * (NULL-terminated) are the names fuse-advise writes: the refusal names the first entry not
 * among them, else the first entry. */
typedef struct fa_outdir fa_outdir;
/* The checks of fa_outdir_begin, creating nothing: PATH is missing, or a folder that is not the
 * current folder or above it and holds only fuse-advise's outputs; else FA_ERR_INPUT/IO
 * naming PATH (and the first foreign entry). For refusing before any work is done. */
fa_status fa_outdir_check(fa_ctx *ctx, const char *path, const char *const *own_names);
/* keep_existing: the staging folder starts as hard links of the existing folder's files (a
 * verb that rewrites some of them). *out owned by the caller: commit or abort it. */
fa_status fa_outdir_begin(fa_ctx *ctx, const char *path, const char *const *own_names, bool keep_existing,
                          fa_outdir **out);
/* Where to write (the staging folder); valid until commit/abort. */
const char *fa_outdir_path(const fa_outdir *o);
/* Swap the staging folder in, remove the previous one; frees o (also on failure). */
fa_status fa_outdir_commit(fa_ctx *ctx, fa_outdir *o);
/* Remove the staging folder; frees o. NULL is a no-op. */
void fa_outdir_abort(fa_outdir *o);

/* What of a compiler's log may reach the user (an error message, a report, the database):
 * only diagnostic lines located in `unit` - the name the generated source carries
 * ("FILE:LINE:COL: error: ..." from gcc/clang, "FILE(LINE): error: ..." from NVRTC), its folder
 * dropped - at most 8 of them and about `cap` bytes, control bytes as '?', joined by "; " and
 * appended to out. Never a source excerpt, an include trace, or a line about another file (what
 * an included file holds is never quoted). Returns the number of lines kept. */
int fa_compiler_diagnostics(fa_buf *out, const char *log, size_t len, const char *unit, size_t cap);

/* Bytes this process may still allocate (core/sysmem.c): MemAvailable from /proc/meminfo,
 * lowered to the room under the memory limit of its cgroup and every ancestor (v2 memory.max -
 * memory.current, v1 memory.limit_in_bytes - memory.usage_in_bytes). UINT64_MAX when nothing
 * is known. source (may be NULL): which of them decided, for messages. */
uint64_t fa_mem_available(char *source, size_t cap);
/* The activation limit of every executor of this process that was given none of its own
 * (fa_exec_options.max_memory 0), with why (a static or long-lived string, for messages): the
 * CLI sets it once per model (fa_cli_memory_policy). 0: none beyond what the machine can give. */
void fa_mem_set_default_limit(uint64_t bytes, const char *why);
uint64_t fa_mem_default_limit(const char **why);

/* FNV-1a 64 and SHA-256 (hex, 65 bytes incl. NUL) of a buffer / file. FNV-1a is stable
 * (seeds, cache keys) but not for hash tables keyed by input strings: colliding names are
 * cheap to make. */
uint64_t fa_hash64(const void *data, size_t n);
/* SipHash-1-3 of data under a 128-bit key (Aumasson & Bernstein 2012): for hash tables keyed by
 * strings from input files, with a random key per table (fa_hash_key_random), so no input can
 * be made to collide (hash flooding would make the table quadratic). */
uint64_t fa_hash64_keyed(const uint64_t key[2], const void *data, size_t n);
/* A fresh random key from /dev/urandom (else the clock and pid). */
void fa_hash_key_random(uint64_t key[2]);
/* ---- keyed intern map (core/intern.c): byte strings -> dense ids ----
 * The one hash table for keys that come from input files (names in a trace, tuples of ids):
 * open addressing over SipHash-1-3 under a key drawn once per process (fa_hash_key_random), so no
 * input can be built to collide and make it quadratic. Ids are dense, 0, 1, 2, ... in insertion
 * order, so a caller keeps its per-key records in a plain array indexed by id. */
typedef struct fa_intern fa_intern;
/* keys_ar: where key copies go (borrowed; must outlive every use of a stored key), NULL: an arena
 * of the map's own, freed with it. NULL on OOM. */
fa_intern *fa_intern_create(fa_arena *keys_ar);
void fa_intern_free(fa_intern *m); /* NULL: no-op */
/* The id of key[0..n): its id when present, else the next id with the key copied (n bytes and a
 * NUL after them, so a string key reads back as a C string). *added (may be NULL) says which,
 * *stored (may be NULL) points at the map's copy. -1 on OOM (nothing added). */
int32_t fa_intern_id(fa_intern *m, const void *key, size_t n, bool *added, const void **stored);
/* The same for a C string. */
int32_t fa_intern_str(fa_intern *m, const char *s, bool *added, const char **stored);
/* The id of key[0..n), -1 when absent (nothing added). */
int32_t fa_intern_find(const fa_intern *m, const void *key, size_t n);
size_t fa_intern_count(const fa_intern *m);
/* Bytes the map holds: its tables, and the key copies when they are in its own arena. */
size_t fa_intern_bytes(const fa_intern *m);
void fa_sha256_hex(const void *data, size_t n, char out_hex[65]);
/* The same digest in base64 (RFC 4648, 44 characters + NUL), as a Content-Security-Policy hash
 * source ('sha256-...', CSP Level 2 sec. 4.2.4) writes it. */
void fa_sha256_base64(const void *data, size_t n, char out_b64[45]);
fa_status fa_sha256_file(fa_ctx *ctx, const char *path, char out_hex[65]);
/* fa_sha256_file on a thread of its own, so that the digest of a large model is taken while it
 * loads and while its executor is built (a 837 MB export: 0.47 s at 1.8 GB/s, as long as both;
 * issue 39). _start returns the job, or NULL when no thread could be started (then call
 * fa_sha256_file). _hold(job, true) returns once the reader has stopped between two 64 KiB
 * chunks (or finished), so that nothing of it runs while the caller measures the machine;
 * _hold(job, false) lets it go on; a NULL job is ignored. _finish waits for the digest, frees the
 * job and returns fa_sha256_file's status with its error in ctx and the digest in out_hex; with
 * ctx NULL it only waits and frees (the caller failed already). */
typedef struct fa_sha256_job fa_sha256_job;
fa_sha256_job *fa_sha256_file_start(const char *path);
void fa_sha256_file_hold(fa_sha256_job *job, bool hold);
fa_status fa_sha256_file_finish(fa_ctx *ctx, fa_sha256_job *job, char out_hex[65]);

/* Deterministic PRNG (splitmix64 / xoshiro-like); for zoo weights and test inputs. */
typedef struct fa_rng { uint64_t s; } fa_rng;
void fa_rng_seed(fa_rng *r, uint64_t seed);
uint64_t fa_rng_u64(fa_rng *r);
float fa_rng_uniform(fa_rng *r, float lo, float hi); /* [lo, hi) */
float fa_rng_normal(fa_rng *r);                     /* N(0,1), Box–Muller */

/* ---- statistics (core/stats.c): one convention for every stage ----
 * Quantiles are Hyndman & Fan's type 7 (linear interpolation between order statistics, R's and
 * NumPy's default): q(p) = s[i] + (h - i)(s[i+1] - s[i]) with h = (n - 1)p, i = floor(h), on the
 * sorted samples s. The median is q(0.5), so for an even n it is the mean of the two middle
 * values; the IQR is q(0.75) - q(0.25). Every median the tool prints or stores (iteration and
 * op medians in the run database, the applier's accept/reject rule, the CI gate, the reports)
 * is computed here. */

/* qsort comparator for doubles, ascending. */
int fa_stats_cmp_double(const void *a, const void *b);
/* Type-7 quantile q in [0, 1] of sorted[0..n); NAN when n == 0. */
double fa_stats_quantile_sorted(const double *sorted, size_t n, double q);
/* Type-7 median of v[0..n) (sorts v in place); NAN when n == 0. */
double fa_stats_median(double *v, size_t n);
/* The type-7 median of the per-pair ratios num[i] / den[i] over i < n with den[i] > 0 and both
 * finite (neither array modified); NAN when no pair qualifies or out of memory. Paired samples
 * timed back to back (the probe's and the applier's interleaved rounds): the ratio of each pair
 * cancels a drift both runs shared, which a ratio of two medians does not when the pairs span
 * phases of different speed (issue 19, bench/README.md "Visits and the trace's span"). */
double fa_stats_paired_ratio(const double *num, const double *den, size_t n);
/* The distribution-free confidence interval of the median of sorted[0..n) (ascending): the order
 * statistics sorted[k-1], sorted[n-k] with k the largest such that P(Binomial(n, 1/2) < k) <= 5%
 * (Conover, "Practical Nonparametric Statistics", 3rd ed., sec. 3.2, the sign-test interval for a
 * quantile); *level its coverage 1 - 2 P(Binomial(n, 1/2) < k) (>= 90%). False, *lo *hi NAN and
 * *level 0, when n < 5 (no such k). */
bool fa_stats_median_interval_sorted(const double *sorted, size_t n, double *lo, double *hi, double *level);
/* The signed-rank confidence interval of the centre of sorted[0..n) (ascending; the paired
 * differences of interleaved rounds): the Walsh averages (sorted[i] + sorted[j]) / 2, i <= j,
 * ordered, their k-th smallest and k-th largest, with k the largest such that P(W+ < k) <= 5% for
 * Wilcoxon's signed-rank statistic W+ (exact to n = 100, the normal approximation beyond);
 * *level its coverage 1 - 2 P(W+ < k) (>= 90%); *estimate (may be NULL) the Hodges-Lehmann
 * estimate, the Walsh averages' median (Hollander & Wolfe, "Nonparametric Statistical Methods",
 * 2nd ed., sec. 3.1-3.3). It assumes the differences symmetric about their centre, as alternating
 * which side runs first makes them under no effect, and uses their magnitudes: on normal noise it
 * needs about 2/3 of the pairs the sign-test interval (fa_stats_median_interval_sorted) needs for
 * the same width (asymptotic relative efficiency 3/2). O(n log n) time, no memory beyond its
 * table for n <= 100. False, *lo *hi NAN and *level 0, when n < 5 (no such k) or out of memory. */
bool fa_stats_signed_rank_interval_sorted(const double *sorted, size_t n, double *lo, double *hi, double *level,
                                          double *estimate);
/* That interval over the same per-pair ratios num[i] / den[i] as fa_stats_paired_ratio (issue 36:
 * how far the probe's fused/unfused ratio could move between repetitions of its own pairs). False
 * with *lo, *hi NAN when fewer than 5 pairs qualify or out of memory. */
bool fa_stats_paired_ratio_interval(const double *num, const double *den, size_t n, double *lo, double *hi);
/* The same median of integer samples (ns), rounded half up to an integer (sorts v in place);
 * -1 when n == 0. */
int64_t fa_stats_median_i64(int64_t *v, size_t n);

/* Robust summary of per-iteration samples (ns), type-7 quantiles. */
typedef struct fa_sample_stats {
    int n;
    double median_ns;
    double p25_ns, p75_ns;  /* IQR = p75 - p25 */
    double min_ns;
} fa_sample_stats;
/* Summary of samples[0..n) (not modified); all zero when n <= 0, NAN figures when out of memory. */
void fa_sample_stats_of(const double *samples, int n, fa_sample_stats *out);

/* A measured saving from paired samples: a[i] and b[i] timed in the same round (the applier's
 * interleaved unfused / fused runs of one cluster), d[i] = a[i] - b[i] (ns). */
typedef struct fa_paired_saving {
    int n;                    /* pairs; 0 none */
    double median_ns;         /* type-7 median of d */
    double iqr_ns;            /* type-7 IQR of d */
    double ci_lo_ns, ci_hi_ns; /* distribution-free confidence interval of the median of d: the
                                 order statistics d(k), d(n+1-k) with k the largest such that
                                 P(Binomial(n, 1/2) < k) <= 5% (Conover, "Practical Nonparametric
                                 Statistics", 3rd ed., sec. 3.2, the sign-test interval for a
                                 quantile); NAN when n < 5 (no such k) */
    double ci_level;          /* its coverage, 1 - 2 P(Binomial(n, 1/2) < k) (>= 90%); 0 none */
} fa_paired_saving;
/* The paired saving of a[0..n) and b[0..n) (not modified); n = 0 figures when n <= 0 or out of
 * memory. */
void fa_paired_saving_of(const double *a, const double *b, int n, fa_paired_saving *out);
/* Whether the measurement p resolves a saving of predicted_ns (issue 19's calibration): its
 * confidence interval excludes 0, or its IQR is smaller than |predicted_ns|. An unresolved
 * measurement is within its own noise: it can neither confirm nor falsify the prediction, so
 * calibration counts it apart (bench/calibration.py applies the same rule). */
bool fa_paired_saving_resolved(const fa_paired_saving *p, double predicted_ns);
/* Whether a paired measurement p is settled, the stop rule of the applier's adaptive repetitions
 * (issue 19): its confidence interval lies within +-rel of |median| (rel 0.10: the interval
 * [0.9, 1.1] x median), or within +-abs_floor_ns of the median (a saving too small to matter
 * next to the sub-graph's own time, known to that precision; abs_floor_ns <= 0: no such floor).
 * False without an interval (n < 5). */
bool fa_paired_saving_settled(const fa_paired_saving *p, double rel, double abs_floor_ns);
/* A signed saving (ns) as words for a reason, never a raw negative figure (issue 33): "saving of
 * 3.3 ms", "loss of 412.0 us", "no saving" for exactly 0 (units: ms from 1 ms, us from 1 us, else
 * ns). snprintf's truncation. */
void fa_saving_phrase(char *out, size_t cap, double saving_ns);
/* A duration (ns, >= 0 as a rule) in the unit it reads best in, the same rule: "1.8 us", "31 ns",
 * "2.4 ms" - never "0.0 us" for a few hundred ns. snprintf's truncation. */
void fa_duration_text(char *out, size_t cap, double ns);
/* A confidence interval [lo_ns, hi_ns] of a signed saving in the same words: "saving 1.2..3.4 us",
 * "loss 2.1..2.9 us" (both ends below 0: the loss's own bounds, smaller first), "from a loss of
 * 1.0 us to a saving of 2.0 us" (straddling 0); one unit for both ends. */
void fa_saving_interval_phrase(char *out, size_t cap, double lo_ns, double hi_ns);

/* ---- column tables (core/table.c) ----
 * A text table for the terminal: a header row, then rows of cells, columns two spaces apart.
 * A column's width is the longest of its header and cells, at least min_width and at most
 * max_width (0: no limit; a longer cell is cut to it); right-aligned columns pad on the left; the
 * last column is never padded nor cut. Widths are in bytes. The gate's text report and `runs`
 * print through it. */
typedef struct fa_table_col {
    const char *header;
    int min_width;   /* bytes */
    int max_width;   /* bytes; 0: unlimited */
    bool align_right;
} fa_table_col;
typedef struct fa_table fa_table;
/* cols is borrowed (must outlive the table); NULL when out of memory. */
fa_table *fa_table_create(const fa_table_col *cols, int n_cols);
/* Copies n_cols cells (a NULL cell prints "-"). */
void fa_table_add_row(fa_table *t, const char *const *cells);
/* A free line printed after the last added row, not aligned (an error under a run). */
void fa_table_add_line(fa_table *t, const char *text);
/* Appends the table to out; out->oom is set when the table ran out of memory. */
void fa_table_render(const fa_table *t, fa_buf *out);
void fa_table_free(fa_table *t); /* NULL: no-op */

#endif
