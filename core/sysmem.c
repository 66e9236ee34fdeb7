/* core/sysmem — how much memory this process may still use: the kernel's MemAvailable, lowered
 * to the room left under the memory limit of its cgroup (v2 memory.max, v1
 * memory.limit_in_bytes) and of every ancestor cgroup. */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A decimal number from a one-line file; false when absent or "max". */
static bool read_u64(const char *path, uint64_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char buf[64] = {0};
    bool ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok || buf[0] < '0' || buf[0] > '9') return false;
    *out = strtoull(buf, NULL, 10);
    return true;
}

/* Mount point + root of the cgroup hierarchy: v2 (fstype cgroup2) or the v1 one whose super
 * options name the memory controller. /proc/self/mountinfo (proc(5)): "ID PARENT MAJ:MIN ROOT
 * MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS". */
static bool cgroup_mount(bool v2, char *mnt, size_t mcap, char *root, size_t rcap)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f) return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char r[1024], m[1024];
        if (sscanf(line, "%*s %*s %*s %1023s %1023s", r, m) != 2) continue;
        const char *dash = strstr(line, " - ");
        if (!dash) continue;
        char fstype[64], src[256], super[1024] = "";
        if (sscanf(dash + 3, "%63s %255s %1023s", fstype, src, super) < 2) continue;
        if (v2 ? strcmp(fstype, "cgroup2") != 0 : (strcmp(fstype, "cgroup") != 0 || !strstr(super, "memory"))) continue;
        snprintf(mnt, mcap, "%s", m);
        snprintf(root, rcap, "%s", r);
        found = true;
    }
    fclose(f);
    return found;
}

/* Room left under the memory limits of this process's cgroup and its ancestors (UINT64_MAX when
 * none is set). source: the tightest limit's file. */
static uint64_t cgroup_room(char *source, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return UINT64_MAX;
    char line[4096], path[4096] = "";
    bool v2 = false, have = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = 0;
        const char *ctrl = c1 + 1;
        if (!strncmp(line, "0", 1) && c1 == line + 1 && !*ctrl && !have) { /* v2: "0::/path" */
            snprintf(path, sizeof path, "%s", c2 + 1);
            v2 = true;
            have = true;
        } else if (strstr(ctrl, "memory")) { /* v1: "N:memory:/path" (wins over v2) */
            snprintf(path, sizeof path, "%s", c2 + 1);
            v2 = false;
            have = true;
        }
    }
    fclose(f);
    char mnt[1024], root[1024];
    if (!have || !cgroup_mount(v2, mnt, sizeof mnt, root, sizeof root)) return UINT64_MAX;
    /* the process's path relative to the mount's root */
    const char *rel = path;
    size_t rl = strlen(root);
    if (strcmp(root, "/") && !strncmp(path, root, rl)) rel = path + rl;
    uint64_t best = UINT64_MAX;
    char dir[8192];
    snprintf(dir, sizeof dir, "%s%s", mnt, strcmp(rel, "/") ? rel : "");
    size_t ml = strlen(mnt);
    for (;;) {
        char lim_p[8300], use_p[8300];
        snprintf(lim_p, sizeof lim_p, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
        snprintf(use_p, sizeof use_p, "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
        uint64_t lim, use = 0;
        /* v1 reports "no limit" as a huge page-rounded number */
        if (read_u64(lim_p, &lim) && lim < (1ull << 60)) {
            read_u64(use_p, &use);
            uint64_t room = lim > use ? lim - use : 0;
            if (room < best) {
                best = room;
                if (source) snprintf(source, cap, "%s", lim_p);
            }
        }
        if (strlen(dir) <= ml) break;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < ml) break;
        *slash = 0;
    }
    return best;
}

static uint64_t g_default_limit;
static const char *g_default_why;

void fa_mem_set_default_limit(uint64_t bytes, const char *why)
{
    g_default_limit = bytes;
    g_default_why = why;
}

uint64_t fa_mem_default_limit(const char **why)
{
    if (why) *why = g_default_why ? g_default_why : "";
    return g_default_limit;
}

uint64_t fa_mem_available(char *source, size_t cap)
{
    uint64_t avail = UINT64_MAX;
    if (source && cap) snprintf(source, cap, "unknown");
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (uint64_t)kb * 1024;
                if (source && cap) snprintf(source, cap, "MemAvailable in /proc/meminfo");
                break;
            }
        fclose(f);
    }
    char cg[1024];
    uint64_t room = cgroup_room(cg, sizeof cg);
    if (room < avail) {
        avail = room;
        if (source && cap) snprintf(source, cap, "the cgroup memory limit %s, less its usage", cg);
    }
    return avail;
}
