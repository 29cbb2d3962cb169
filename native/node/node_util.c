#include "node_util.h"
#include "rmx_fail.h"

#include "rmx_threads.h"

#include "rmx_args.h"

#include <dirent.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

size_t node_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (size_t)kb * 1024;
}

static int read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

/* sysfs writes sizes as "48K", "2048K", "266240K". */
static size_t parse_cache_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K')
        v *= 1024;
    else if (*end == 'M')
        v *= 1024 * 1024;
    else if (*end == 'G')
        v *= 1024ULL * 1024 * 1024;
    return (size_t)v;
}

/* Calls fn for every data/unified cache index of every CPU. */
typedef void (*cache_fn)(void *ctx, int level, size_t bytes, const char *shared);

static void each_cache(cache_fn fn, void *ctx, int cpu_only)
{
    for (int cpu = 0; cpu < (cpu_only ? 1 : 4096); cpu++) {
        char base[128];
        snprintf(base, sizeof base, "/sys/devices/system/cpu/cpu%d/cache", cpu);
        DIR *d = opendir(base);
        if (!d) {
            if (cpu > 0 && access("/sys/devices/system/cpu/cpu0", F_OK) == 0) {
                char probe[96];
                snprintf(probe, sizeof probe, "/sys/devices/system/cpu/cpu%d", cpu + 1);
                if (access(probe, F_OK) != 0)
                    break; /* past the last CPU */
            }
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "index", 5) != 0)
                continue;
            char path[512], type[64], level[16], size[32], shared[256];
            snprintf(path, sizeof path, "%s/%s/type", base, e->d_name);
            if (read_line(path, type, sizeof type) || strcmp(type, "Instruction") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s/level", base, e->d_name);
            if (read_line(path, level, sizeof level))
                continue;
            snprintf(path, sizeof path, "%s/%s/size", base, e->d_name);
            if (read_line(path, size, sizeof size))
                continue;
            snprintf(path, sizeof path, "%s/%s/shared_cpu_list", base, e->d_name);
            if (read_line(path, shared, sizeof shared))
                snprintf(shared, sizeof shared, "cpu%d", cpu);
            fn(ctx, atoi(level), parse_cache_size(size), shared);
        }
        closedir(d);
    }
}

typedef struct {
    int level;
    size_t bytes;
} llc_ctx;

static void llc_visit(void *arg, int level, size_t bytes, const char *shared)
{
    (void)shared;
    llc_ctx *c = arg;
    if (level > c->level || (level == c->level && bytes > c->bytes)) {
        c->level = level;
        c->bytes = bytes;
    }
}

size_t node_llc_bytes(void)
{
    llc_ctx c = {0, 0};
    each_cache(llc_visit, &c, 1);
    return c.bytes;
}

/* Distinct caches are told apart by (level, CPUs sharing it). */
typedef struct {
    char keys[256][272];
    int n;
    size_t total;
} total_ctx;

static void total_visit(void *arg, int level, size_t bytes, const char *shared)
{
    total_ctx *c = arg;
    char key[272];
    snprintf(key, sizeof key, "%d:%s", level, shared);
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->keys[i], key) == 0)
            return;
    if (c->n < 256)
        strcpy(c->keys[c->n++], key);
    c->total += bytes;
}

size_t node_total_cache_bytes(void)
{
    static total_ctx c; /* 70 KB: too big for the stack of a worker, fine as a static */
    memset(&c, 0, sizeof c);
    each_cache(total_visit, &c, 0);
    return c.total;
}

void node_check_size(const char *prog, const char *what, size_t bytes, size_t count)
{
    if (bytes == 0)
        rmx_die(2, prog, "%s must be greater than zero", what);
    size_t avail = node_mem_available();
    if (avail && (bytes > avail / count || bytes * count > avail))
        rmx_die(2, prog, "%s of %.1f MiB (x%zu buffers) does not fit in the %.1f MiB of available memory", what,
                (double)bytes / 1048576.0, count, (double)avail / 1048576.0);
}

int node_sweep_range(const char *prog, size_t min_size, size_t *max_size, size_t count)
{
    int given = *max_size != NODE_UNSET;
    if (!given) {
        size_t llc = node_llc_bytes(), avail = node_mem_available();
        *max_size = llc ? 4 * llc : (size_t)1 << 30;
        if (avail && *max_size > avail / 4)
            *max_size = avail / 4;
    }
    node_check_size(prog, "--min-size", min_size, count);
    node_check_size(prog, "--max-size", *max_size, count);
    if (min_size > *max_size)
        rmx_die(2, prog, "--min-size (%zu bytes) is larger than --max-size (%zu bytes)", min_size, *max_size);
    return given;
}

void *node_alloc(const char *prog, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (bytes + page - 1) / page * page;
    void *p = mmap(NULL, len ? len : page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        rmx_die(1, prog, "cannot allocate %.1f MiB", (double)bytes / 1048576.0);
    memset(p, 0, len);
    return p;
}

void node_free(void *p, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (p)
        munmap(p, (bytes + page - 1) / page * page);
}

size_t node_sweep(size_t lo, size_t hi, int per_octave, size_t align, size_t **out)
{
    size_t cap = 16, n = 0;
    size_t *v = rmx_realloc_or_exit(NULL, cap * sizeof *v, "a sweep's sizes");
    if (align == 0)
        align = 1;
    if (per_octave < 1)
        per_octave = 1;
    for (int i = 0;; i++) {
        double x = (double)lo * exp2((double)i / per_octave);
        size_t s = (size_t)(x / (double)align + 0.5) * align;
        if (s < align)
            s = align;
        if (s > hi)
            s = hi / align * align;
        if (n == cap) {
            cap *= 2;
            v = rmx_realloc_or_exit(v, cap * sizeof *v, "a sweep's sizes");
        }
        if (s >= align && (n == 0 || s > v[n - 1]))
            v[n++] = s;
        if (x >= (double)hi)
            break;
    }
    *out = v;
    return n;
}

unsigned long long node_rand(node_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ULL;
}

int node_threads(const char *prog, long long threads)
{
    int allowed = rmx_cpus_allowed();
    if (threads > allowed)
        rmx_die(2, prog, "--threads %lld is more than the %d CPUs this process may run on: threads sharing a CPU "
                "do not measure all cores", threads, allowed);
    return threads > 0 ? (int)threads : allowed;
}
