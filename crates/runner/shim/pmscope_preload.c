/* pmscope_preload: places an unmodified program's large allocations on a memory target.
 *
 * Loaded with LD_PRELOAD by `pmscope run` (crates/runner/src/launch.rs), which sets the
 * PMSCOPE_RUN_* variables below; without PMSCOPE_RUN_REPORT the library forwards every call
 * untouched. See README.md here for the design and its limits.
 *
 * Two doors lead to large memory and both are interposed:
 *   - the malloc family: glibc's malloc maps its large chunks with its internal __mmap,
 *     which no LD_PRELOAD can see, so malloc/calloc/realloc/... of at least the threshold
 *     are served here, each from its own mapping on the target;
 *   - mmap/munmap/mremap: a program's (or jemalloc's, or stress-ng's) own private
 *     anonymous mappings of at least the threshold are served from the target too.
 * Everything else goes to the real functions found with dlsym(RTLD_NEXT); dlsym's own
 * calloc is served from a static arena. Nothing here calls malloc: tables are static, text
 * is formatted into stack buffers and written with write(2).
 *
 * Each process reports for itself: its destructor appends one block (pid, exe, counters,
 * page sizes and nodes read back from /proc/self/smaps and numa_maps) to the report file
 * with one O_APPEND write. A wrapper that execs the program (timeout, a shell, pyenv's
 * shim script) and the program it starts are two blocks; `pmscope run` sums them. (The
 * first version kept the report to the first process and unset the variable, so under any
 * wrapper the real program's placement was lost: python3 via pyenv reported nothing.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MPOL_BIND
#define MPOL_BIND 2
#endif

#define MIB2 ((size_t)2 << 20)

enum backing { BACK_ANON, BACK_DIR };
enum pages { PAGES_4K, PAGES_THP, PAGES_2M, PAGES_1G };

static enum backing cfg_backing = BACK_ANON;
static enum pages cfg_pages = PAGES_4K;
static int cfg_node = -1;
static size_t cfg_threshold = MIB2;
static int cfg_keep;
static char cfg_dir[2048];
static char cfg_report[512];

/* 0: not yet, 1: being configured, 2: active, 3: inactive (no report path). */
static int state;

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static size_t (*real_malloc_usable_size)(void *);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

/* dlsym may calloc before the real allocator is known: serve that from a static arena. */
static char bootstrap_arena[64 * 1024] __attribute__((aligned(64)));
static size_t bootstrap_used;
static int resolving;

static int in_bootstrap(const void *p) {
    return (const char *)p >= bootstrap_arena &&
           (const char *)p < bootstrap_arena + sizeof bootstrap_arena;
}

static void *bootstrap_alloc(size_t n) {
    size_t off = (bootstrap_used + 63) & ~(size_t)63;
    if (off + n > sizeof bootstrap_arena) return NULL;
    bootstrap_used = off + n;
    return bootstrap_arena + off;
}

static void resolve(void) {
    if (real_malloc || resolving) return;
    resolving = 1;
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
    real_malloc_usable_size = dlsym(RTLD_NEXT, "malloc_usable_size");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_munmap = dlsym(RTLD_NEXT, "munmap");
    real_mremap = dlsym(RTLD_NEXT, "mremap");
    real_malloc = dlsym(RTLD_NEXT, "malloc"); /* last: it is the "resolved" flag */
    resolving = 0;
}

/* ---------------------------------------------------------------------------------------
 * Regions served from the target. One table for both doors: `user` is the pointer a
 * malloc-family call returned (0 for a region served to mmap). Linear probing on `base`
 * would not find a malloc block by its user pointer, so the table is a plain array
 * scanned under the lock; a served region is at least the threshold (2 MiB by default),
 * so a process has few of them, and the fast path of free() (a pointer outside every
 * served range) never takes the lock. */
struct region {
    uintptr_t base;   /* start of the mapping; 0 = free slot */
    size_t length;    /* bytes mapped */
    uintptr_t user;   /* malloc-family pointer, 0 for an mmap-served region */
    size_t asked;     /* bytes the program asked for */
    int shared;       /* backed by a file: copied on fork */
};

#define MAX_REGIONS 16384
static struct region regions[MAX_REGIONS];
static size_t region_hwm; /* slots [0, hwm) may be in use */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t served_lo = UINTPTR_MAX, served_hi; /* every served range ever, widened */

/* Counters of this process (reset in a fork child, which reports for itself). */
struct counters {
    size_t served_count, served_bytes, mapped_bytes, live_bytes, peak_bytes;
    size_t failed_count, failed_bytes, below_count, below_bytes;
    size_t mmap_served_count, sync_count, fork_copies;
    size_t verified_count, verified_bytes, resident_bytes, bytes_4k, bytes_2m, bytes_1g;
    size_t unverified_count;
    size_t node_bytes[64];
};
static struct counters ctr;

static int overlaps(const struct region *r, uintptr_t a, size_t len) {
    return r->base && r->base < a + len && a < r->base + r->length;
}

static struct region *slot_free(void) {
    for (size_t i = 0; i < MAX_REGIONS; i++) {
        if (!regions[i].base) {
            if (i >= region_hwm) region_hwm = i + 1;
            return &regions[i];
        }
    }
    return NULL;
}

static struct region *find_user(uintptr_t user) {
    for (size_t i = 0; i < region_hwm; i++)
        if (regions[i].base && regions[i].user == user) return &regions[i];
    return NULL;
}

static int maybe_served(const void *p) {
    uintptr_t a = (uintptr_t)p;
    return a >= __atomic_load_n(&served_lo, __ATOMIC_RELAXED) &&
           a < __atomic_load_n(&served_hi, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------------------------
 * Small text helpers that never allocate. */
static size_t parse_size(const char *s) { return (size_t)strtoull(s, NULL, 10); }

static void append(char *buf, size_t cap, size_t *used, const char *fmt, ...) {
    if (*used >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (n > 0) *used += (size_t)n < cap - *used ? (size_t)n : cap - *used;
}

/* ---------------------------------------------------------------------------------------
 * Configuration. */
static void configure(void) {
    const char *v = getenv("PMSCOPE_RUN_REPORT");
    if (!v || !*v || strlen(v) >= sizeof cfg_report) {
        __atomic_store_n(&state, 3, __ATOMIC_RELEASE);
        return;
    }
    memcpy(cfg_report, v, strlen(v) + 1);
    if ((v = getenv("PMSCOPE_RUN_BACKING"))) {
        if (!strcmp(v, "dir")) cfg_backing = BACK_DIR;
    }
    if ((v = getenv("PMSCOPE_RUN_PAGES"))) {
        if (!strcmp(v, "thp")) cfg_pages = PAGES_THP;
        else if (!strcmp(v, "2m")) cfg_pages = PAGES_2M;
        else if (!strcmp(v, "1g")) cfg_pages = PAGES_1G;
    }
    if ((v = getenv("PMSCOPE_RUN_NODE")) && *v) cfg_node = atoi(v);
    if ((v = getenv("PMSCOPE_RUN_THRESHOLD")) && *v) cfg_threshold = parse_size(v);
    if (cfg_threshold == 0) cfg_threshold = 1;
    if ((v = getenv("PMSCOPE_RUN_DIR")) && strlen(v) < sizeof cfg_dir)
        memcpy(cfg_dir, v, strlen(v) + 1);
    cfg_keep = (v = getenv("PMSCOPE_RUN_KEEP")) && !strcmp(v, "1");
    __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

/* Whether the shim serves anything; configures on first use (a library's constructor may
 * allocate before ours has run). */
static int active(void) {
    int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (s == 2) return 1;
    if (s == 3) return 0;
    int expected = 0;
    if (__atomic_compare_exchange_n(&state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        resolve();
        configure();
        if (state == 2) pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    }
    /* Another thread is configuring: forward this call rather than wait. */
    return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2;
}

__attribute__((constructor)) static void shim_init(void) {
    resolve();
    active();
}

/* ---------------------------------------------------------------------------------------
 * Mapping on the target. */
static size_t granule(void) {
    switch (cfg_pages) {
    case PAGES_2M: return MIB2;
    case PAGES_1G: return (size_t)1 << 30;
    case PAGES_THP: return MIB2; /* a THP range ending inside a huge page cannot be huge */
    default: return 4096;
    }
}

static int hugetlb(void) { return cfg_backing == BACK_ANON && (cfg_pages == PAGES_2M || cfg_pages == PAGES_1G); }

static unsigned file_seq;

/* A new file of `length` bytes on the target, or -1 (errno set). */
static int backing_fd(size_t length) {
    int fd = -1;
    if (cfg_backing == BACK_DIR) {
        char path[sizeof cfg_dir + 64];
        unsigned seq = __atomic_fetch_add(&file_seq, 1, __ATOMIC_RELAXED);
        if (cfg_keep) {
            /* The name --keep gives (crates/sys/src/scratch.rs `kept`): never swept. */
            snprintf(path, sizeof path, "%s/pmscope-%d-%u-kept.bin", cfg_dir, (int)getpid(), seq);
            fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        } else {
            fd = open(cfg_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
            if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
                /* The scratch naming (`named`): if this process dies before the unlink,
                 * the next pmscope run sweeps the file. */
                snprintf(path, sizeof path, "%s/pmscope-%d-%u.bin", cfg_dir, (int)getpid(), seq);
                fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd >= 0) unlink(path);
            }
        }
    }
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)length) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Maps `length` (a multiple of granule()) bytes on the target at an address aligned to the
 * granule, or MAP_FAILED. `*shared` says whether a file backs it. */
static void *map_target(size_t length, int *shared) {
    size_t g = granule();
    *shared = cfg_backing != BACK_ANON;
    void *p;
    if (cfg_backing == BACK_ANON && cfg_pages != PAGES_THP) {
        int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
        if (cfg_pages == PAGES_2M) flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (21 << MAP_HUGE_SHIFT);
        if (cfg_pages == PAGES_1G) flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (30 << MAP_HUGE_SHIFT);
        p = real_mmap(NULL, length, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (p == MAP_FAILED) return p;
    } else {
        /* Reserve length + granule, then place the mapping on an aligned address inside,
         * so THP and DAX can use 2 MiB pages from the first byte. */
        size_t span = length + (g > 4096 ? g : 0);
        char *res = real_mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (res == MAP_FAILED) return MAP_FAILED;
        char *at = (char *)(((uintptr_t)res + g - 1) & ~(uintptr_t)(g - 1));
        if (at > res) real_munmap(res, (size_t)(at - res));
        if (at + length < res + span) real_munmap(at + length, (size_t)(res + span - (at + length)));
        if (cfg_backing == BACK_ANON) {
            p = real_mmap(at, length, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        } else {
            int fd = backing_fd(length);
            if (fd < 0) {
                real_munmap(at, length);
                return MAP_FAILED;
            }
            p = MAP_FAILED;
            if (cfg_backing == BACK_DIR) {
                p = real_mmap(at, length, PROT_READ | PROT_WRITE,
                              MAP_SHARED_VALIDATE | MAP_SYNC | MAP_FIXED, fd, 0);
                if (p != MAP_FAILED) __atomic_fetch_add(&ctr.sync_count, 1, __ATOMIC_RELAXED);
            }
            if (p == MAP_FAILED)
                p = real_mmap(at, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
            close(fd);
        }
        if (p == MAP_FAILED) {
            real_munmap(at, length);
            return MAP_FAILED;
        }
    }
    if (cfg_pages == PAGES_THP) madvise(p, length, MADV_HUGEPAGE);
    if (cfg_pages == PAGES_4K) madvise(p, length, MADV_NOHUGEPAGE);
    if (cfg_node >= 0 && cfg_node < 64) {
        unsigned long mask = 1ul << cfg_node;
        if (syscall(SYS_mbind, p, length, MPOL_BIND, &mask, 65ul, 0u) != 0) {
            /* A node the kernel refuses is a failed placement, not a silent one. */
            real_munmap(p, length);
            return MAP_FAILED;
        }
    }
    return p;
}

static void note_served(uintptr_t base, size_t length, size_t asked, int via_mmap) {
    __atomic_fetch_add(&ctr.served_count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctr.served_bytes, asked, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctr.mapped_bytes, length, __ATOMIC_RELAXED);
    if (via_mmap) __atomic_fetch_add(&ctr.mmap_served_count, 1, __ATOMIC_RELAXED);
    size_t live = __atomic_add_fetch(&ctr.live_bytes, length, __ATOMIC_RELAXED);
    size_t peak = __atomic_load_n(&ctr.peak_bytes, __ATOMIC_RELAXED);
    while (live > peak &&
           !__atomic_compare_exchange_n(&ctr.peak_bytes, &peak, live, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    uintptr_t lo = __atomic_load_n(&served_lo, __ATOMIC_RELAXED);
    while (base < lo && !__atomic_compare_exchange_n(&served_lo, &lo, base, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    uintptr_t hi = __atomic_load_n(&served_hi, __ATOMIC_RELAXED);
    while (base + length > hi &&
           !__atomic_compare_exchange_n(&served_hi, &hi, base + length, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static void note_failed(size_t size) {
    __atomic_fetch_add(&ctr.failed_count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctr.failed_bytes, size, __ATOMIC_RELAXED);
}

static void note_below(size_t size) {
    __atomic_fetch_add(&ctr.below_count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ctr.below_bytes, size, __ATOMIC_RELAXED);
}

/* Serves `size` bytes; returns the base or MAP_FAILED. `user` is filled for malloc-family
 * calls (aligned to `align`). */
static void *serve(size_t size, size_t align, int via_mmap, uintptr_t *user) {
    size_t g = granule();
    size_t extra = align > g ? align : 0;
    if (size > SIZE_MAX - extra - g) return MAP_FAILED;
    size_t length = (size + extra + g - 1) & ~(g - 1);
    int shared;
    void *base = map_target(length, &shared);
    if (base == MAP_FAILED) {
        note_failed(size);
        return MAP_FAILED;
    }
    uintptr_t u = ((uintptr_t)base + align - 1) & ~(uintptr_t)(align - 1);
    pthread_mutex_lock(&lock);
    struct region *r = slot_free();
    if (r) *r = (struct region){(uintptr_t)base, length, via_mmap ? 0 : u, size, shared};
    pthread_mutex_unlock(&lock);
    if (!r) {
        real_munmap(base, length);
        note_failed(size);
        return MAP_FAILED;
    }
    note_served((uintptr_t)base, length, size, via_mmap);
    if (user) *user = u;
    return base;
}

/* ---------------------------------------------------------------------------------------
 * Verification: what the kernel backs a range with, from /proc/self/smaps and numa_maps,
 * read with read(2) into a static buffer (no stdio, no malloc). */
static pthread_mutex_t verify_lock = PTHREAD_MUTEX_INITIALIZER;
static char vbuf[1 << 16];
#define VERIFY_BUDGET 512 /* regions read back per process; past it they count as unverified */

struct vma_acc {
    uintptr_t lo, hi;     /* the VMA */
    double frac;          /* share of it inside the range */
    size_t kps, rss, pmd, hugetlb;
};

static void vma_flush(struct vma_acc *v) {
    if (v->frac <= 0) return;
    size_t rss = (size_t)((double)v->rss * v->frac);
    size_t pmd = (size_t)((double)v->pmd * v->frac);
    size_t tlb = (size_t)((double)v->hugetlb * v->frac);
    if (v->kps >= ((size_t)1 << 30)) {
        ctr.bytes_1g += tlb;
        ctr.resident_bytes += tlb;
    } else if (v->kps >= MIB2) {
        ctr.bytes_2m += tlb;
        ctr.resident_bytes += tlb;
    } else {
        if (pmd > rss) pmd = rss;
        ctr.bytes_2m += pmd;
        ctr.bytes_4k += rss - pmd;
        ctr.resident_bytes += rss;
    }
    v->frac = 0;
}

/* Calls `line` for each line of a /proc file. */
static void for_lines(const char *path, void (*line)(char *, void *), void *arg) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, vbuf + have, sizeof vbuf - 1 - have);
        if (n <= 0) break;
        have += (size_t)n;
        vbuf[have] = 0;
        char *start = vbuf;
        char *nl;
        while ((nl = memchr(start, '\n', (size_t)(vbuf + have - start)))) {
            *nl = 0;
            line(start, arg);
            start = nl + 1;
        }
        have = (size_t)(vbuf + have - start);
        memmove(vbuf, start, have);
        if (have == sizeof vbuf - 1) have = 0; /* a line longer than the buffer: dropped */
    }
    close(fd);
}

struct range {
    uintptr_t lo, hi;
    struct vma_acc v;
    size_t nvmas;
    struct { uintptr_t lo; double frac; } vmas[32]; /* the VMAs met, for numa_maps */
};

static int header(const char *s, uintptr_t *lo, uintptr_t *hi) {
    char *end;
    unsigned long a = strtoul(s, &end, 16);
    if (*end != '-') return 0;
    unsigned long b = strtoul(end + 1, &end, 16);
    if (*end != ' ') return 0;
    *lo = a;
    *hi = b;
    return 1;
}

static size_t field_kb(const char *s, const char *name) {
    size_t n = strlen(name);
    if (strncmp(s, name, n) != 0) return (size_t)-1;
    return (size_t)strtoull(s + n, NULL, 10) << 10;
}

/* One field line of a VMA's smaps block, into its accumulator (if the VMA is of interest). */
static void vma_field(struct vma_acc *a, const char *s) {
    if (a->frac <= 0) return;
    size_t v;
    if ((v = field_kb(s, "KernelPageSize:")) != (size_t)-1) a->kps = v;
    else if ((v = field_kb(s, "Rss:")) != (size_t)-1) a->rss = v;
    else if ((v = field_kb(s, "AnonHugePages:")) != (size_t)-1) a->pmd += v;
    else if ((v = field_kb(s, "ShmemPmdMapped:")) != (size_t)-1) a->pmd += v;
    else if ((v = field_kb(s, "FilePmdMapped:")) != (size_t)-1) a->pmd += v;
    else if ((v = field_kb(s, "Shared_Hugetlb:")) != (size_t)-1) a->hugetlb += v;
    else if ((v = field_kb(s, "Private_Hugetlb:")) != (size_t)-1) a->hugetlb += v;
}

/* The pages per node of one numa_maps line ("... N0=512 kernelpagesize_kB=4"), the share
 * `frac` of them counted. */
static void add_node_pages(const char *s, double frac) {
    char *end;
    size_t kps = 4096;
    const char *k = strstr(s, "kernelpagesize_kB=");
    if (k) kps = (size_t)strtoull(k + 18, NULL, 10) << 10;
    for (const char *t = strstr(s, " N"); t; t = strstr(t + 1, " N")) {
        unsigned long node = strtoul(t + 2, &end, 10);
        if (*end != '=' || node >= 64) continue;
        ctr.node_bytes[node] += (size_t)((double)strtoull(end + 1, NULL, 10) * (double)kps * frac);
    }
}

static void smaps_line(char *s, void *arg) {
    struct range *r = arg;
    uintptr_t lo, hi;
    if (header(s, &lo, &hi)) {
        vma_flush(&r->v);
        uintptr_t a = lo > r->lo ? lo : r->lo, b = hi < r->hi ? hi : r->hi;
        r->v = (struct vma_acc){lo, hi, a < b ? (double)(b - a) / (double)(hi - lo) : 0, 4096, 0, 0, 0};
        if (r->v.frac > 0 && r->nvmas < 32) {
            r->vmas[r->nvmas].lo = lo;
            r->vmas[r->nvmas++].frac = r->v.frac;
        }
        return;
    }
    vma_field(&r->v, s);
}

/* numa_maps: "7f0000000000 bind:0 anon=512 dirty=512 N0=512 kernelpagesize_kB=4". */
static void numa_line(char *s, void *arg) {
    struct range *r = arg;
    char *end;
    uintptr_t lo = strtoul(s, &end, 16);
    if (*end != ' ') return;
    double frac = 0;
    for (size_t i = 0; i < r->nvmas; i++)
        if (r->vmas[i].lo == lo) frac = r->vmas[i].frac;
    if (frac <= 0) return;
    add_node_pages(s, frac);
}

/* Reads back the page sizes and nodes of [base, base+length) before it is released. */
static void verify(uintptr_t base, size_t length) {
    pthread_mutex_lock(&verify_lock);
    if (ctr.verified_count >= VERIFY_BUDGET) {
        ctr.unverified_count++;
        pthread_mutex_unlock(&verify_lock);
        return;
    }
    struct range r = {base, base + length, {0}, 0, {{0, 0}}};
    for_lines("/proc/self/smaps", smaps_line, &r);
    vma_flush(&r.v);
    for_lines("/proc/self/numa_maps", numa_line, &r);
    ctr.verified_count++;
    ctr.verified_bytes += length;
    pthread_mutex_unlock(&verify_lock);
}

/* ---------------------------------------------------------------------------------------
 * Reading back many regions at once (the live ones at exit): one pass over smaps and one
 * over numa_maps for all of them, so a server holding thousands of slabs is read back whole
 * at the cost of two file reads, where verify() reads both files per region. */
#define MAX_MET 65536
static struct region batch[MAX_REGIONS];
static struct { uintptr_t lo; double frac; } met[MAX_MET]; /* VMAs met, ascending */

struct batch_walk {
    const struct region *rs; /* sorted by base, disjoint */
    size_t n;
    struct vma_acc v;
    size_t nmet;
};

static void sift_down(struct region *a, size_t i, size_t n) {
    for (;;) {
        size_t big = i, l = 2 * i + 1, r = l + 1;
        if (l < n && a[l].base > a[big].base) big = l;
        if (r < n && a[r].base > a[big].base) big = r;
        if (big == i) return;
        struct region t = a[i];
        a[i] = a[big];
        a[big] = t;
        i = big;
    }
}

/* Heapsort by base: no allocation (qsort may call malloc, which is ours). */
static void sort_by_base(struct region *a, size_t n) {
    for (size_t i = n / 2; i-- > 0;) sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        struct region t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}

/* Bytes of [lo, hi) inside the regions. */
static size_t covered(const struct region *rs, size_t n, uintptr_t lo, uintptr_t hi) {
    size_t a = 0, b = n; /* first region ending after lo */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (rs[m].base + rs[m].length <= lo) a = m + 1;
        else b = m;
    }
    size_t bytes = 0;
    for (size_t i = a; i < n && rs[i].base < hi; i++) {
        uintptr_t x = rs[i].base > lo ? rs[i].base : lo;
        uintptr_t y = rs[i].base + rs[i].length < hi ? rs[i].base + rs[i].length : hi;
        if (x < y) bytes += y - x;
    }
    return bytes;
}

static void batch_smaps_line(char *s, void *arg) {
    struct batch_walk *w = arg;
    uintptr_t lo, hi;
    if (header(s, &lo, &hi)) {
        vma_flush(&w->v);
        size_t in = covered(w->rs, w->n, lo, hi);
        w->v = (struct vma_acc){lo, hi, in ? (double)in / (double)(hi - lo) : 0, 4096, 0, 0, 0};
        if (in && w->nmet < MAX_MET) {
            met[w->nmet].lo = lo;
            met[w->nmet++].frac = w->v.frac;
        }
        return;
    }
    vma_field(&w->v, s);
}

static void batch_numa_line(char *s, void *arg) {
    struct batch_walk *w = arg;
    char *end;
    uintptr_t lo = strtoul(s, &end, 16);
    if (*end != ' ') return;
    size_t a = 0, b = w->nmet;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (met[m].lo < lo) a = m + 1;
        else b = m;
    }
    if (a == w->nmet || met[a].lo != lo) return;
    add_node_pages(s, met[a].frac);
}

/* Reads back every region of rs[0..n) (sorted here), whatever the budget. */
static void verify_all(struct region *rs, size_t n) {
    if (!n) return;
    sort_by_base(rs, n);
    pthread_mutex_lock(&verify_lock);
    struct batch_walk w = {rs, n, {0}, 0};
    for_lines("/proc/self/smaps", batch_smaps_line, &w);
    vma_flush(&w.v);
    for_lines("/proc/self/numa_maps", batch_numa_line, &w);
    ctr.verified_count += n;
    for (size_t i = 0; i < n; i++) ctr.verified_bytes += rs[i].length;
    pthread_mutex_unlock(&verify_lock);
}

/* ---------------------------------------------------------------------------------------
 * Releasing. */
static void release_whole(struct region r) {
    verify(r.base, r.length);
    real_munmap((void *)r.base, r.length);
    __atomic_fetch_sub(&ctr.live_bytes, r.length, __ATOMIC_RELAXED);
}

/* Frees a malloc-family block if it is ours; 0 if not. */
static int free_served(void *p) {
    if (!maybe_served(p)) return 0;
    pthread_mutex_lock(&lock);
    struct region *slot = find_user((uintptr_t)p);
    struct region r = {0};
    if (slot) {
        r = *slot;
        slot->base = 0;
    }
    pthread_mutex_unlock(&lock);
    if (!slot) return 0;
    release_whole(r);
    return 1;
}

/* munmap of [a, a+len) where it meets mmap-served regions. Whole regions are verified and
 * released; a part is unmapped and the region trimmed or split. hugetlb mappings can only be
 * unmapped in whole huge pages: the huge pages wholly inside the part are unmapped and the
 * region keeps the rest until the program unmaps it too. Returns 1 if it handled the call. */
static int munmap_served(uintptr_t a, size_t len) {
    if (!len || a + len <= __atomic_load_n(&served_lo, __ATOMIC_RELAXED) ||
        a >= __atomic_load_n(&served_hi, __ATOMIC_RELAXED))
        return 0;
    size_t g = hugetlb() ? granule() : 4096;
    len = (len + 4095) & ~(size_t)4095;
    uintptr_t end = a + len;
    int handled = 0;
    struct region whole[16];
    size_t nwhole = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < region_hwm; i++) {
        struct region *r = &regions[i];
        if (!overlaps(r, a, len) || r->user) continue;
        handled = 1;
        uintptr_t rend = r->base + r->length;
        if (a <= r->base && end >= rend) {
            if (nwhole < 16) {
                whole[nwhole++] = *r;
            } else {
                real_munmap((void *)r->base, r->length);
                __atomic_fetch_sub(&ctr.live_bytes, r->length, __ATOMIC_RELAXED);
            }
            r->base = 0;
            continue;
        }
        uintptr_t cut_lo = a > r->base ? a : r->base, cut_hi = end < rend ? end : rend;
        cut_lo = (cut_lo + g - 1) & ~(uintptr_t)(g - 1);
        cut_hi = cut_hi & ~(uintptr_t)(g - 1);
        if (cut_hi <= cut_lo) continue;
        real_munmap((void *)cut_lo, cut_hi - cut_lo);
        __atomic_fetch_sub(&ctr.live_bytes, cut_hi - cut_lo, __ATOMIC_RELAXED);
        if (cut_lo == r->base && cut_hi == rend) {
            r->base = 0;
        } else if (cut_lo == r->base) {
            r->length = rend - cut_hi;
            r->base = cut_hi;
        } else if (cut_hi == rend) {
            r->length = cut_lo - r->base;
        } else {
            struct region tail = *r;
            r->length = cut_lo - r->base;
            tail.base = cut_hi;
            tail.length = rend - cut_hi;
            struct region *t = slot_free();
            if (t) *t = tail; /* no slot: the tail stays mapped, unaccounted */
        }
    }
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < nwhole; i++) release_whole(whole[i]);
    if (handled && !hugetlb()) {
        /* Whatever else the range covers the program unmaps as it asked. */
        real_munmap((void *)a, len);
    }
    return handled;
}

/* ---------------------------------------------------------------------------------------
 * fork: a region backed by a shared file would stay shared between parent and child,
 * which a private heap never is (redis' fork-and-save would read the parent's later
 * writes). The child copies each such region into a new file at the same address. */
static void atfork_prepare(void) { pthread_mutex_lock(&lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&lock); }

static void atfork_child(void) {
    for (size_t i = 0; i < region_hwm; i++) {
        struct region *r = &regions[i];
        if (!r->base || !r->shared) continue;
        int fd = backing_fd(r->length);
        int ok = fd >= 0;
        size_t done = 0;
        while (ok && done < r->length) {
            ssize_t n = pwrite(fd, (char *)r->base + done, r->length - done, (off_t)done);
            if (n <= 0) ok = 0;
            else done += (size_t)n;
        }
        if (ok && real_mmap((void *)r->base, r->length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
            ok = 0;
        if (fd >= 0) close(fd);
        if (ok) ctr.fork_copies++;
        else {
            /* Leaving it shared would corrupt the parent silently; failing loudly is all
             * that is left. */
            static const char msg[] = "pmscope run: a forked child could not copy its heap off the shared target; exiting\n";
            ssize_t w = write(2, msg, sizeof msg - 1);
            (void)w;
            _exit(127);
        }
    }
    /* The child reports for itself, from zero. */
    size_t copies = ctr.fork_copies, live = 0;
    for (size_t i = 0; i < region_hwm; i++) live += regions[i].base ? regions[i].length : 0;
    memset(&ctr, 0, sizeof ctr);
    ctr.fork_copies = copies;
    ctr.live_bytes = ctr.peak_bytes = live;
    pthread_mutex_init(&lock, NULL);
    pthread_mutex_init(&verify_lock, NULL);
}

/* ---------------------------------------------------------------------------------------
 * The malloc family. */
static void *alloc_large(size_t size, size_t align) {
    uintptr_t user;
    if (align < 64) align = 64;
    if (serve(size, align, 0, &user) == MAP_FAILED) return NULL;
    return (void *)user;
}

void *malloc(size_t size) {
    if (!real_malloc) {
        resolve();
        if (!real_malloc) return bootstrap_alloc(size);
    }
    if (active()) {
        if (size >= cfg_threshold) {
            void *p = alloc_large(size, 64);
            if (p) return p;
        } else {
            note_below(size);
        }
    }
    return real_malloc(size);
}

void *calloc(size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!real_calloc) {
        resolve();
        if (!real_calloc) {
            void *p = bootstrap_alloc(total);
            if (p) memset(p, 0, total);
            return p;
        }
    }
    if (active()) {
        if (total >= cfg_threshold) {
            void *p = alloc_large(total, 64); /* a new mapping reads as zeros */
            if (p) return p;
        } else {
            note_below(total);
        }
    }
    return real_calloc(n, size);
}

void free(void *p) {
    if (!p || in_bootstrap(p)) return;
    if (free_served(p)) return;
    if (!real_free) resolve();
    real_free(p);
}

/* Usable bytes of a served block, or (size_t)-1. */
static size_t served_usable(void *p) {
    if (!maybe_served(p)) return (size_t)-1;
    pthread_mutex_lock(&lock);
    struct region *r = find_user((uintptr_t)p);
    size_t have = r ? r->base + r->length - r->user : (size_t)-1;
    pthread_mutex_unlock(&lock);
    return have;
}

void *realloc(void *p, size_t size) {
    if (!real_realloc) resolve();
    if (!p) return malloc(size);
    if (in_bootstrap(p)) {
        void *q = malloc(size);
        if (q) memcpy(q, p, size); /* the arena outlives any read past the old end */
        return q;
    }
    size_t have = served_usable(p);
    if (have != (size_t)-1) {
        if (size == 0) {
            free_served(p);
            return NULL;
        }
        if (size <= have && size >= cfg_threshold) return p;
        void *q = malloc(size);
        if (!q) return NULL;
        memcpy(q, p, have < size ? have : size);
        free_served(p);
        return q;
    }
    if (active() && size >= cfg_threshold) {
        size_t old = real_malloc_usable_size(p);
        void *q = alloc_large(size, 64);
        if (q) {
            memcpy(q, p, old < size ? old : size);
            real_free(p);
            return q;
        }
    }
    return real_realloc(p, size);
}

void *reallocarray(void *p, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, total);
}

static void *aligned_common(size_t align, size_t size, int *handled) {
    *handled = 0;
    if (!active()) return NULL;
    if (size < cfg_threshold) {
        note_below(size);
        return NULL;
    }
    void *p = alloc_large(size, align);
    *handled = p != NULL;
    return p;
}

int posix_memalign(void **out, size_t align, size_t size) {
    if (!real_posix_memalign) resolve();
    if (align && !(align & (align - 1)) && align % sizeof(void *) == 0) {
        int handled;
        void *p = aligned_common(align, size, &handled);
        if (handled) {
            *out = p;
            return 0;
        }
    }
    return real_posix_memalign(out, align, size);
}

void *aligned_alloc(size_t align, size_t size) {
    if (!real_aligned_alloc) resolve();
    if (align && !(align & (align - 1))) {
        int handled;
        void *p = aligned_common(align, size, &handled);
        if (handled) return p;
    }
    return real_aligned_alloc(align, size);
}

void *memalign(size_t align, size_t size) {
    if (!real_memalign) resolve();
    if (align && !(align & (align - 1))) {
        int handled;
        void *p = aligned_common(align, size, &handled);
        if (handled) return p;
    }
    return real_memalign(align, size);
}

void *valloc(size_t size) { return memalign(4096, size); }

void *pvalloc(size_t size) { return memalign(4096, (size + 4095) & ~(size_t)4095); }

size_t malloc_usable_size(void *p) {
    if (!p || in_bootstrap(p)) return 0;
    size_t have = served_usable(p);
    if (have != (size_t)-1) return have;
    if (!real_malloc_usable_size) resolve();
    return real_malloc_usable_size(p);
}

/* ---------------------------------------------------------------------------------------
 * The program's own mappings. Served: private anonymous, readable or writable (PROT_NONE
 * is an address-space reservation, not memory), no address asked for, no hugetlb or stack
 * flags of its own. */
static int mmap_wanted(void *addr, size_t len, int prot, int flags, int fd) {
    if (addr || fd != -1 || len < cfg_threshold || prot == PROT_NONE) return 0;
    if ((flags & MAP_TYPE) != MAP_PRIVATE || !(flags & MAP_ANONYMOUS)) return 0;
    if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_HUGETLB | MAP_GROWSDOWN | MAP_STACK)) return 0;
    return 1;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (!real_mmap) resolve();
    if (active() && (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE && !addr) {
        if (mmap_wanted(addr, len, prot, flags, fd)) {
            void *p = serve(len, 4096, 1, NULL);
            if (p != MAP_FAILED) {
                if (prot != (PROT_READ | PROT_WRITE)) mprotect(p, len, prot);
                return p;
            }
        } else if (len < cfg_threshold) {
            note_below(len);
        }
    }
    return real_mmap(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len) {
    if (!real_munmap) resolve();
    if (active() && munmap_served((uintptr_t)addr, len)) return 0;
    return real_munmap(addr, len);
}

/* An mmap-served region moved or resized: shrinking unmaps the tail; growing maps a new
 * region on the target and copies (a file-backed region cannot grow in place without its
 * file); growing without MREMAP_MAYMOVE fails as the kernel may fail it. */
void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
    if (!real_mremap) resolve();
    void *fixed = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        fixed = va_arg(ap, void *);
        va_end(ap);
    }
    if (active() && maybe_served(old)) {
        pthread_mutex_lock(&lock);
        struct region *r = NULL;
        for (size_t i = 0; i < region_hwm; i++)
            if (regions[i].base == (uintptr_t)old && !regions[i].user) r = &regions[i];
        size_t have = r ? r->length : 0;
        pthread_mutex_unlock(&lock);
        if (r) {
            if (flags & ~MREMAP_MAYMOVE) {
                errno = EINVAL;
                return MAP_FAILED;
            }
            if (new_len <= have) {
                size_t g = hugetlb() ? granule() : 4096;
                size_t keep = (new_len + g - 1) & ~(g - 1);
                if (keep < have) munmap_served((uintptr_t)old + keep, have - keep);
                return old;
            }
            if (!(flags & MREMAP_MAYMOVE)) {
                errno = ENOMEM;
                return MAP_FAILED;
            }
            void *p = serve(new_len, 4096, 1, NULL);
            if (p == MAP_FAILED) {
                p = real_mmap(NULL, new_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) return p;
            }
            memcpy(p, old, old_len < have ? old_len : have);
            munmap_served((uintptr_t)old, have);
            return p;
        }
    }
    if (flags & MREMAP_FIXED) return real_mremap(old, old_len, new_len, flags, fixed);
    return real_mremap(old, old_len, new_len, flags);
}

/* ---------------------------------------------------------------------------------------
 * The report: one block per process, appended with one write(2). */
static void report(void) {
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2) return;
    /* Live regions are read back now, all of them in one pass: their bytes count like
     * released ones. */
    size_t nlive = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < region_hwm; i++)
        if (regions[i].base) batch[nlive++] = regions[i];
    pthread_mutex_unlock(&lock);
    verify_all(batch, nlive);
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    for (char *c = exe; *c; c++)
        if (*c == '\n') *c = '?';
    char buf[4096];
    size_t u = 0;
    pthread_mutex_lock(&verify_lock);
    struct counters c = ctr;
    pthread_mutex_unlock(&verify_lock);
    append(buf, sizeof buf, &u, "process %d\nexe %s\n", (int)getpid(), exe);
    append(buf, sizeof buf, &u,
           "served_count %zu\nserved_bytes %zu\nmapped_bytes %zu\npeak_bytes %zu\n"
           "mmap_served_count %zu\nfailed_count %zu\nfailed_bytes %zu\nbelow_count %zu\n"
           "below_bytes %zu\nsync_count %zu\nfork_copies %zu\nverified_count %zu\n"
           "verified_bytes %zu\nunverified_count %zu\nresident_bytes %zu\nbytes_4k %zu\n"
           "bytes_2m %zu\nbytes_1g %zu\n",
           c.served_count, c.served_bytes, c.mapped_bytes, c.peak_bytes, c.mmap_served_count,
           c.failed_count, c.failed_bytes, c.below_count, c.below_bytes, c.sync_count,
           c.fork_copies, c.verified_count, c.verified_bytes, c.unverified_count,
           c.resident_bytes, c.bytes_4k, c.bytes_2m, c.bytes_1g);
    for (int i = 0; i < 64; i++)
        if (c.node_bytes[i]) append(buf, sizeof buf, &u, "node_bytes %d %zu\n", i, c.node_bytes[i]);
    append(buf, sizeof buf, &u, "end\n");
    int fd = open(cfg_report, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t w = write(fd, buf, u);
    (void)w;
    close(fd);
}

__attribute__((destructor)) static void shim_fini(void) { report(); }
