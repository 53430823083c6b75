/* bench/gap's LD_PRELOAD counter: malloc, calloc, realloc, posix_memalign, aligned_alloc,
 * free, memcpy and memmove calls (and bytes), added up in a shared file ($GAP_COUNTERS) that
 * bench/gap reads before and after a load, natively (no valgrind). Built by bench/gap with
 * `cc -O2 -shared -fPIC -fno-builtin -fno-tree-loop-distribute-patterns`. Calls made inside
 * glibc (its own memcpy calls) are not seen; the program's are. Copies of BIG bytes or more
 * are also added up per call site (return address), for bench/gap --copies. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

enum { MALLOC, MALLOC_BYTES, FREE, REALLOC, REALLOC_BYTES, MEMCPY, MEMCPY_BYTES, MEMMOVE,
       MEMMOVE_BYTES, NCOUNTERS };

static uint64_t *counters;
/* copies of at least BIG bytes, per call site (the return address): SITES slots of
 * {address, calls, bytes} after the counters, open addressing */
#define BIG 256
#define SITES 4096
struct site { uint64_t addr, calls, bytes; };
static struct site *sites;

static void site(void *ret, size_t n) {
    if (!sites || n < BIG) return;
    uint64_t a = (uint64_t)ret;
    for (uint64_t i = (a >> 4) * 0x9E3779B97F4A7C15ull >> 52, k = 0; k < SITES; k++, i = (i + 1) % SITES) {
        uint64_t cur = __atomic_load_n(&sites[i].addr, __ATOMIC_RELAXED);
        if (cur == 0) {
            uint64_t zero = 0;
            if (!__atomic_compare_exchange_n(&sites[i].addr, &zero, a, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                cur = zero;
            else
                cur = a;
        }
        if (cur == a) {
            __atomic_fetch_add(&sites[i].calls, 1, __ATOMIC_RELAXED);
            __atomic_fetch_add(&sites[i].bytes, n, __ATOMIC_RELAXED);
            return;
        }
    }
}
static void *(*real_memcpy)(void *, const void *, size_t);
static void *(*real_memmove)(void *, const void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static inline void add(int k, uint64_t v) {
    if (counters) __atomic_fetch_add(&counters[k], v, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void init(void) {
    real_memcpy = dlsym(RTLD_NEXT, "memcpy");
    real_memmove = dlsym(RTLD_NEXT, "memmove");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    extern char *getenv(const char *);
    const char *path = getenv("GAP_COUNTERS");
    if (!path) return;
    int fd = open(path, O_RDWR);
    if (fd < 0) return;
    void *p = mmap(0, 4096 + SITES * sizeof(struct site), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) {
        counters = p;
        sites = (struct site *)((char *)p + 4096);
    }
}

void *malloc(size_t n) { add(MALLOC, 1); add(MALLOC_BYTES, n); return __libc_malloc(n); }
void *calloc(size_t k, size_t n) { add(MALLOC, 1); add(MALLOC_BYTES, k * n); return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { add(REALLOC, 1); add(REALLOC_BYTES, n); return __libc_realloc(p, n); }
void free(void *p) { if (p) add(FREE, 1); __libc_free(p); }

int posix_memalign(void **out, size_t align, size_t n) {
    add(MALLOC, 1); add(MALLOC_BYTES, n);
    return real_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n) {
    add(MALLOC, 1); add(MALLOC_BYTES, n);
    return real_aligned_alloc(align, n);
}

static void *bytewise(void *d, const void *s, size_t n) {
    volatile unsigned char *dd = d;
    const unsigned char *ss = s;
    if (dd < ss) for (size_t i = 0; i < n; i++) dd[i] = ss[i];
    else for (size_t i = n; i > 0; i--) dd[i - 1] = ss[i - 1];
    return d;
}

void *memcpy(void *d, const void *s, size_t n) {
    add(MEMCPY, 1); add(MEMCPY_BYTES, n); site(__builtin_return_address(0), n);
    return real_memcpy ? real_memcpy(d, s, n) : bytewise(d, s, n);
}

void *memmove(void *d, const void *s, size_t n) {
    add(MEMMOVE, 1); add(MEMMOVE_BYTES, n); site(__builtin_return_address(0), n);
    return real_memmove ? real_memmove(d, s, n) : bytewise(d, s, n);
}
