/* pmscope_preload: places an unmodified program's large allocations on a memory target.
 *
 * Loaded with LD_PRELOAD by `pmscope run`. Configuration comes from the environment
 * (see README.md here); everything else is forwarded to the real allocator found with
 * dlsym(RTLD_NEXT). glibc's malloc maps its large chunks through its internal __mmap, so
 * interposing mmap alone would miss them: the malloc family is interposed instead.
 *
 * Shim allocations are recorded in a table keyed by the user pointer, so free/realloc
 * tell them from the real allocator's without reading foreign memory.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#ifndef MPOL_BIND
#define MPOL_BIND 2
#endif

enum kind { KIND_DRAM, KIND_SHM, KIND_FILE };
enum pages { PAGES_4K, PAGES_THP, PAGES_2M, PAGES_1G };

static enum kind cfg_kind = KIND_DRAM;
static enum pages cfg_pages = PAGES_4K;
static int cfg_node = -1;
static size_t cfg_threshold = (size_t)1 << 20;
static char cfg_dir[4096];
static char cfg_report[4096];
static pid_t cfg_pid;
static int cfg_ready;

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

/* One live shim allocation. */
struct region {
    void *user;    /* pointer handed out; 0 = empty slot, 1 = tombstone */
    void *base;    /* start of the mapping */
    size_t length; /* mapping length */
    size_t size;   /* bytes asked for */
};

#define TABLE_SLOTS 65536
static struct region table[TABLE_SLOTS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
#define TOMBSTONE ((void *)1)

/* Counters for the report. */
static size_t placed_count, placed_bytes, peak_bytes, live_bytes, failed_count;
static size_t below_count, below_bytes;

static size_t slot_of(const void *p) {
    uintptr_t x = (uintptr_t)p >> 4;
    x ^= x >> 17;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 16) & (TABLE_SLOTS - 1);
}

static int table_insert(struct region r) {
    size_t i = slot_of(r.user);
    for (size_t n = 0; n < TABLE_SLOTS; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
        if (table[i].user == NULL || table[i].user == TOMBSTONE) {
            table[i] = r;
            return 1;
        }
    }
    return 0;
}

/* Removes and returns the region of `user`; 0 if it is not a shim allocation. */
static int table_take(const void *user, struct region *out) {
    size_t i = slot_of(user);
    for (size_t n = 0; n < TABLE_SLOTS; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
        if (table[i].user == NULL) return 0;
        if (table[i].user == user) {
            *out = table[i];
            table[i].user = TOMBSTONE;
            return 1;
        }
    }
    return 0;
}

static int table_find(const void *user, struct region *out) {
    size_t i = slot_of(user);
    for (size_t n = 0; n < TABLE_SLOTS; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
        if (table[i].user == NULL) return 0;
        if (table[i].user == user) {
            *out = table[i];
            return 1;
        }
    }
    return 0;
}

static void resolve(void) {
    if (real_malloc || resolving) return;
    resolving = 1;
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
    real_malloc_usable_size = dlsym(RTLD_NEXT, "malloc_usable_size");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_munmap = dlsym(RTLD_NEXT, "munmap");
    resolving = 0;
}

static void configure(void) {
    const char *v;
    if ((v = getenv("PMSCOPE_SHIM_KIND"))) {
        if (!strcmp(v, "shm")) cfg_kind = KIND_SHM;
        else if (!strcmp(v, "file")) cfg_kind = KIND_FILE;
        else cfg_kind = KIND_DRAM;
    }
    if ((v = getenv("PMSCOPE_SHIM_PAGES"))) {
        if (!strcmp(v, "thp")) cfg_pages = PAGES_THP;
        else if (!strcmp(v, "2m")) cfg_pages = PAGES_2M;
        else if (!strcmp(v, "1g")) cfg_pages = PAGES_1G;
        else cfg_pages = PAGES_4K;
    }
    if ((v = getenv("PMSCOPE_SHIM_NODE")) && *v) cfg_node = atoi(v);
    if ((v = getenv("PMSCOPE_SHIM_THRESHOLD")) && *v) cfg_threshold = strtoull(v, NULL, 10);
    if ((v = getenv("PMSCOPE_SHIM_DIR"))) snprintf(cfg_dir, sizeof cfg_dir, "%s", v);
    if ((v = getenv("PMSCOPE_SHIM_REPORT"))) snprintf(cfg_report, sizeof cfg_report, "%s", v);
    /* Programs this one starts must not write into the same report (forks are caught by
     * the pid check in report()). */
    unsetenv("PMSCOPE_SHIM_REPORT");
    cfg_pid = getpid();
    cfg_ready = 1;
}

__attribute__((constructor)) static void shim_init(void) {
    resolve();
    configure();
}

static size_t page_of_policy(void) {
    switch (cfg_pages) {
    case PAGES_2M: return (size_t)2 << 20;
    case PAGES_1G: return (size_t)1 << 30;
    default: return 4096;
    }
}

/* A file descriptor backing `length` bytes, or -1 for anonymous memory. */
static int backing_fd(size_t length) {
    int fd = -1;
    if (cfg_kind == KIND_SHM) {
        fd = (int)syscall(SYS_memfd_create, "pmscope-shm", 0);
    } else if (cfg_kind == KIND_FILE) {
        fd = open(cfg_dir, O_TMPFILE | O_RDWR | O_EXCL, 0600);
        if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
            char path[4200];
            snprintf(path, sizeof path, "%s/pmscope-run.XXXXXX", cfg_dir);
            fd = mkostemp(path, O_CLOEXEC);
            if (fd >= 0) unlink(path); /* unnamed from here on: nothing is left behind */
        }
    } else {
        return -1;
    }
    if (fd < 0) return -2;
    if (ftruncate(fd, (off_t)length) != 0) {
        close(fd);
        return -2;
    }
    return fd;
}

static void *map_target(size_t length) {
    int fd = backing_fd(length);
    if (fd == -2) return MAP_FAILED;
    void *p;
    if (fd >= 0) {
        p = real_mmap(NULL, length, PROT_READ | PROT_WRITE,
                      MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
        if (p == MAP_FAILED)
            p = real_mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
    } else {
        int flags = MAP_PRIVATE | MAP_ANONYMOUS;
        if (cfg_pages == PAGES_2M) flags |= MAP_HUGETLB | (21 << MAP_HUGE_SHIFT);
        if (cfg_pages == PAGES_1G) flags |= MAP_HUGETLB | (30 << MAP_HUGE_SHIFT);
        p = real_mmap(NULL, length, PROT_READ | PROT_WRITE, flags, -1, 0);
    }
    if (p == MAP_FAILED) return p;
    if (cfg_pages == PAGES_THP) madvise(p, length, MADV_HUGEPAGE);
    if (cfg_pages == PAGES_4K && fd < 0) madvise(p, length, MADV_NOHUGEPAGE);
    if (cfg_node >= 0 && cfg_node < 64) {
        unsigned long mask = 1ul << cfg_node;
        syscall(SYS_mbind, p, length, MPOL_BIND, &mask, 64ul, 0u);
    }
    return p;
}

/* Places `size` bytes aligned to `align` on the target; NULL if the target refused. */
static void *shim_alloc(size_t size, size_t align) {
    size_t page = page_of_policy();
    if (align < 64) align = 64;
    size_t length = size + (align > page ? align : 0);
    length = (length + page - 1) & ~(page - 1);
    void *base = map_target(length);
    if (base == MAP_FAILED) {
        pthread_mutex_lock(&table_lock);
        failed_count++;
        pthread_mutex_unlock(&table_lock);
        return NULL;
    }
    uintptr_t user = ((uintptr_t)base + align - 1) & ~(uintptr_t)(align - 1);
    struct region r = {(void *)user, base, length, size};
    pthread_mutex_lock(&table_lock);
    int ok = table_insert(r);
    if (ok) {
        placed_count++;
        placed_bytes += size;
        live_bytes += size;
        if (live_bytes > peak_bytes) peak_bytes = live_bytes;
    }
    pthread_mutex_unlock(&table_lock);
    if (!ok) {
        real_munmap(base, length);
        return NULL;
    }
    return (void *)user;
}

static int shim_free(void *p) {
    struct region r;
    pthread_mutex_lock(&table_lock);
    int mine = table_take(p, &r);
    if (mine) live_bytes -= r.size;
    pthread_mutex_unlock(&table_lock);
    if (mine) real_munmap(r.base, r.length);
    return mine;
}

static void count_below(size_t size) {
    pthread_mutex_lock(&table_lock);
    below_count++;
    below_bytes += size;
    pthread_mutex_unlock(&table_lock);
}

static int wants_target(size_t size) { return cfg_ready && size >= cfg_threshold; }

void *malloc(size_t size) {
    if (!real_malloc) {
        resolve();
        if (!real_malloc) return bootstrap_alloc(size);
    }
    if (wants_target(size)) {
        void *p = shim_alloc(size, 64);
        if (p) return p;
    } else if (cfg_ready) {
        count_below(size);
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
    if (wants_target(total)) {
        void *p = shim_alloc(total, 64); /* fresh mappings are zero */
        if (p) return p;
    } else if (cfg_ready) {
        count_below(total);
    }
    return real_calloc(n, size);
}

void free(void *p) {
    if (!p || in_bootstrap(p)) return;
    if (shim_free(p)) return;
    if (!real_free) resolve();
    real_free(p);
}

static size_t usable(void *p) {
    struct region r;
    pthread_mutex_lock(&table_lock);
    int mine = table_find(p, &r);
    pthread_mutex_unlock(&table_lock);
    if (mine) return r.length - (size_t)((char *)r.user - (char *)r.base);
    return (size_t)-1;
}

void *realloc(void *p, size_t size) {
    if (!real_realloc) resolve();
    if (!p) return malloc(size);
    if (in_bootstrap(p)) {
        void *q = malloc(size);
        if (q) memcpy(q, p, size); /* the arena outlives any read past the old end */
        return q;
    }
    size_t have = usable(p);
    if (have != (size_t)-1) {
        if (size == 0) {
            shim_free(p);
            return NULL;
        }
        void *q = malloc(size);
        if (!q) return NULL;
        memcpy(q, p, have < size ? have : size);
        shim_free(p);
        return q;
    }
    if (wants_target(size)) {
        size_t old = real_malloc_usable_size(p);
        void *q = shim_alloc(size, 64);
        if (q) {
            memcpy(q, p, old < size ? old : size);
            real_free(p);
            return q;
        }
    }
    return real_realloc(p, size);
}

int posix_memalign(void **out, size_t align, size_t size) {
    if (!real_posix_memalign) resolve();
    if (wants_target(size)) {
        void *p = shim_alloc(size, align);
        if (p) {
            *out = p;
            return 0;
        }
    } else if (cfg_ready) {
        count_below(size);
    }
    return real_posix_memalign(out, align, size);
}

void *aligned_alloc(size_t align, size_t size) {
    if (!real_aligned_alloc) resolve();
    if (wants_target(size)) {
        void *p = shim_alloc(size, align);
        if (p) return p;
    } else if (cfg_ready) {
        count_below(size);
    }
    return real_aligned_alloc(align, size);
}

void *memalign(size_t align, size_t size) {
    if (!real_memalign) resolve();
    if (wants_target(size)) {
        void *p = shim_alloc(size, align);
        if (p) return p;
    } else if (cfg_ready) {
        count_below(size);
    }
    return real_memalign(align, size);
}

void *valloc(size_t size) { return memalign(4096, size); }

void *pvalloc(size_t size) { return memalign(4096, (size + 4095) & ~(size_t)4095); }

size_t malloc_usable_size(void *p) {
    if (!p) return 0;
    if (in_bootstrap(p)) return 0;
    size_t have = usable(p);
    if (have != (size_t)-1) return have;
    if (!real_malloc_usable_size) resolve();
    return real_malloc_usable_size(p);
}

/* Sums KernelPageSize-weighted bytes of live shim ranges from /proc/self/smaps. */
static void report(void) {
    if (!cfg_report[0] || getpid() != cfg_pid) return;
    int fd = open(cfg_report, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return;
    char line[512];
    size_t live_huge = 0, live_rss = 0, live_checked = 0;
    unsigned long kps_kb = 0;
    FILE *f = fopen("/proc/self/smaps", "re");
    if (f) {
        uintptr_t lo = 0, hi = 0;
        int ours = 0;
        while (fgets(line, sizeof line, f)) {
            unsigned long a, b, v;
            if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
                lo = a;
                hi = b;
                ours = 0;
                pthread_mutex_lock(&table_lock);
                for (size_t i = 0; i < TABLE_SLOTS; i++) {
                    if (table[i].user && table[i].user != TOMBSTONE &&
                        (uintptr_t)table[i].base < hi &&
                        (uintptr_t)table[i].base + table[i].length > lo) {
                        ours = 1;
                        break;
                    }
                }
                pthread_mutex_unlock(&table_lock);
                if (ours) live_checked += hi - lo;
            } else if (ours && sscanf(line, "KernelPageSize: %lu kB", &v) == 1) {
                if (v > kps_kb) kps_kb = v;
            } else if (ours && sscanf(line, "Rss: %lu kB", &v) == 1) {
                live_rss += v << 10;
            } else if (ours && sscanf(line, "AnonHugePages: %lu kB", &v) == 1) {
                live_huge += v << 10;
            } else if (ours && sscanf(line, "ShmemPmdMapped: %lu kB", &v) == 1) {
                live_huge += v << 10;
            } else if (ours && sscanf(line, "FilePmdMapped: %lu kB", &v) == 1) {
                live_huge += v << 10;
            }
        }
        fclose(f);
    }
    pthread_mutex_lock(&table_lock);
    size_t c[7] = {placed_count, placed_bytes, peak_bytes, live_bytes,
                   failed_count, below_count, below_bytes};
    pthread_mutex_unlock(&table_lock);
    /* Printed outside the lock: dprintf may allocate, and malloc takes the lock. */
    dprintf(fd,
            "placed_count %zu\nplaced_bytes %zu\npeak_bytes %zu\nlive_bytes %zu\n"
            "failed_count %zu\nbelow_count %zu\nbelow_bytes %zu\n"
            "live_mapped_bytes %zu\nlive_rss_bytes %zu\nlive_pmd_bytes %zu\n"
            "live_kernel_page_bytes %lu\n",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], live_checked, live_rss, live_huge,
            kps_kb << 10);
    close(fd);
}

__attribute__((destructor)) static void shim_fini(void) { report(); }
