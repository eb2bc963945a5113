/* placement_probe: the program `pmscope run`'s tests run under the preload library. It
 * allocates large buffers (malloc, calloc, realloc, its own mmap) and small ones, then
 * checks from /proc/self/smaps and numa_maps that the large ones are on the target and the
 * small ones are not, and that fork keeps a file-backed heap private. Exits 1 with a
 * sentence on stderr when the placement is wrong.
 *
 *   placement_probe EXPECT [NODE]
 *     EXPECT: 4k (anonymous, MADV_NOHUGEPAGE), thp (anonymous, AnonHugePages), 2m (hugetlb),
 *             file:DIR (a file in DIR); PROBE_EXPECT_SYNC=1 also wants MAP_SYNC (VmFlags sf)
 *     NODE:   numa_maps must show the buffers bound to and resident on this node only
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

struct vma {
    unsigned long lo, hi;
    char path[512];
    char flags[1024];
    unsigned long kps_kb, anon_huge_kb, pmd_kb, hugetlb_kb, rss_kb;
};

static int fails;

static void fail(const char *what, const char *why) {
    fprintf(stderr, "placement_probe: %s: %s\n", what, why);
    fails++;
}

static int find_vma(const void *p, struct vma *v) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return 0;
    char line[1024];
    int in = 0, found = 0;
    unsigned long a = (unsigned long)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int n = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &n) == 2 && n > 0) {
            if (found) break;
            in = a >= lo && a < hi;
            if (in) {
                memset(v, 0, sizeof *v);
                v->lo = lo;
                v->hi = hi;
                snprintf(v->path, sizeof v->path, "%s", line + n);
                v->path[strcspn(v->path, "\n")] = 0;
                found = 1;
            }
            continue;
        }
        if (!in) continue;
        unsigned long x;
        if (sscanf(line, "KernelPageSize: %lu", &x) == 1) v->kps_kb = x;
        else if (sscanf(line, "Rss: %lu", &x) == 1) v->rss_kb = x;
        else if (sscanf(line, "AnonHugePages: %lu", &x) == 1) v->anon_huge_kb = x;
        else if (sscanf(line, "ShmemPmdMapped: %lu", &x) == 1) v->pmd_kb += x;
        else if (sscanf(line, "FilePmdMapped: %lu", &x) == 1) v->pmd_kb += x;
        else if (sscanf(line, "Shared_Hugetlb: %lu", &x) == 1) v->hugetlb_kb += x;
        else if (sscanf(line, "Private_Hugetlb: %lu", &x) == 1) v->hugetlb_kb += x;
        else if (!strncmp(line, "VmFlags:", 8)) snprintf(v->flags, sizeof v->flags, "%s", line + 8);
    }
    fclose(f);
    return found;
}

static int has_flag(const struct vma *v, const char *flag) {
    char pat[8];
    snprintf(pat, sizeof pat, " %s", flag);
    const char *s = strstr(v->flags, pat);
    return s && (s[strlen(pat)] == ' ' || s[strlen(pat)] == '\n' || s[strlen(pat)] == 0);
}

/* Whether the VMA is one the preload library made for EXPECT. */
static int on_target(const struct vma *v, const char *expect, char *why, size_t n) {
    if (!strcmp(expect, "4k")) {
        if (v->path[0]) return snprintf(why, n, "backed by '%s', not anonymous memory", v->path), 0;
        if (!has_flag(v, "nh")) return snprintf(why, n, "no MADV_NOHUGEPAGE (VmFlags:%s)", v->flags), 0;
        if (v->anon_huge_kb) return snprintf(why, n, "%lu kB on THP", v->anon_huge_kb), 0;
        return 1;
    }
    if (!strcmp(expect, "thp")) {
        if (v->path[0]) return snprintf(why, n, "backed by '%s', not anonymous memory", v->path), 0;
        if (!has_flag(v, "hg")) return snprintf(why, n, "no MADV_HUGEPAGE (VmFlags:%s)", v->flags), 0;
        if (!v->anon_huge_kb) return snprintf(why, n, "no AnonHugePages (Rss %lu kB)", v->rss_kb), 0;
        return 1;
    }
    if (!strcmp(expect, "2m")) {
        if (v->kps_kb != 2048) return snprintf(why, n, "KernelPageSize %lu kB", v->kps_kb), 0;
        if (!v->hugetlb_kb) return snprintf(why, n, "no hugetlb pages resident"), 0;
        return 1;
    }
    if (!strncmp(expect, "file:", 5)) {
        const char *dir = expect + 5;
        size_t l = strlen(dir);
        if (strncmp(v->path, dir, l) != 0 || v->path[l] != '/')
            return snprintf(why, n, "backed by '%s', not a file in %s", v->path, dir), 0;
        if (getenv("PROBE_EXPECT_SYNC") && !has_flag(v, "sf"))
            return snprintf(why, n, "no MAP_SYNC (VmFlags:%s)", v->flags), 0;
        return 1;
    }
    return snprintf(why, n, "unknown expectation %s", expect), 0;
}

static void expect_placed(const char *what, const void *p, const char *expect) {
    struct vma v;
    char why[1200];
    if (!find_vma(p, &v)) return fail(what, "no VMA holds it");
    if (!on_target(&v, expect, why, sizeof why)) fail(what, why);
}

static void expect_left_alone(const char *what, const void *p, const char *expect) {
    struct vma v;
    char why[1200];
    if (!find_vma(p, &v)) return fail(what, "no VMA holds it");
    if (on_target(&v, expect, why, sizeof why)) fail(what, "a small allocation was placed on the target");
    if (v.path[0] && v.path[0] != '[') fail(what, "a small allocation is file-backed");
}

static void expect_node(const char *what, const void *p, int node) {
    FILE *f = fopen("/proc/self/numa_maps", "r");
    if (!f) return fail(what, "cannot read numa_maps");
    struct vma v;
    if (!find_vma(p, &v)) return fail(what, "no VMA holds it");
    char line[2048], want_bind[32], want_n[32];
    snprintf(want_bind, sizeof want_bind, "bind:%d ", node);
    snprintf(want_n, sizeof want_n, " N%d=", node);
    int seen = 0;
    while (fgets(line, sizeof line, f)) {
        if (strtoul(line, NULL, 16) != v.lo) continue;
        seen = 1;
        if (!strstr(line, want_bind)) fail(what, "not bound to the node (numa_maps)");
        if (!strstr(line, want_n)) fail(what, "no page on the node (numa_maps)");
        for (char *t = strstr(line, " N"); t; t = strstr(t + 1, " N"))
            if (strncmp(t, want_n, strlen(want_n)) != 0 && t[2] >= '0' && t[2] <= '9')
                fail(what, "pages on another node (numa_maps)");
    }
    fclose(f);
    if (!seen) fail(what, "not in numa_maps");
}

static void touch(char *p, size_t n, char c) {
    for (size_t i = 0; i < n; i += 4096) p[i] = c;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: placement_probe EXPECT [NODE]\n");
        return 2;
    }
    const char *expect = argv[1];
    int node = argc > 2 ? atoi(argv[2]) : -1;

    char *big = malloc(32 * MIB);
    char *zeroed = calloc(1, 8 * MIB);
    char *mapped = mmap(NULL, 16 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *small[100];
    for (int i = 0; i < 100; i++) small[i] = malloc(1000);
    if (!big || !zeroed || mapped == MAP_FAILED || !small[99]) {
        fprintf(stderr, "placement_probe: allocation failed\n");
        return 1;
    }
    for (size_t i = 0; i < 8 * MIB; i += 4096)
        if (zeroed[i]) return fail("calloc", "not zeroed"), 1;
    touch(big, 32 * MIB, 'b');
    touch(zeroed, 8 * MIB, 'z');
    touch(mapped, 16 * MIB, 'm');
    for (int i = 0; i < 100; i++) memset(small[i], 's', 1000);

    expect_placed("malloc(32 MiB)", big, expect);
    expect_placed("calloc(8 MiB)", zeroed, expect);
    expect_placed("mmap(16 MiB)", mapped, expect);
    expect_left_alone("malloc(1000)", small[0], expect);
    if (node >= 0) {
        expect_node("malloc(32 MiB)", big, node);
        expect_node("mmap(16 MiB)", mapped, node);
    }

    /* realloc of a placed block keeps its bytes and stays placed. */
    big = realloc(big, 48 * MIB);
    if (!big || big[0] != 'b' || big[32 * MIB - 4096] != 'b') fail("realloc(48 MiB)", "lost its bytes");
    else {
        touch(big + 32 * MIB, 16 * MIB, 'B');
        expect_placed("realloc(48 MiB)", big, expect);
    }

    /* munmap of the middle of a placed mapping leaves both ends usable. */
    if (munmap(mapped + 4 * MIB, 4 * MIB) != 0) fail("munmap(middle)", "failed");
    mapped[0] = 'M';
    mapped[12 * MIB] = 'M';
    if (mapped[4096] != 'm' || mapped[15 * MIB] != 'm') fail("munmap(middle)", "changed the rest");

    /* fork: the child's writes must not reach the parent's heap, even on a shared file. */
    pid_t pid = fork();
    if (pid == 0) {
        big[0] = 'X';
        zeroed[0] = 'X';
        _exit(big[0] == 'X' ? 0 : 3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("fork", "the child failed");
    if (big[0] != 'b' || zeroed[0] != 'z') fail("fork", "the child's write reached the parent");

    for (int i = 0; i < 100; i++) free(small[i]);
    free(zeroed);
    free(big);
    munmap(mapped, 16 * MIB);
    if (fails) return 1;
    printf("placement_probe: all placed as %s\n", expect);
    return 0;
}
