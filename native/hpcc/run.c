/* What every rmax-hpcc command does around its kernels: forms, point and done records, the single form. */
#include "hpcc.h"

#include "rmx_args.h"
#include "rmx_names.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int hc_forms(const char *list)
{
    static const char *const names[] = {"single", "star", "mpi"};
    int chosen[3] = {0};
    if (!rmx_names(PROG, "forms", "form", list, names, 3, chosen))
        rmx_die(2, PROG, "--forms: no form given");
    return (chosen[0] ? HC_SINGLE : 0) | (chosen[1] ? HC_STAR : 0) | (chosen[2] ? HC_MPI : 0);
}

void *hc_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        hc_fail(1, "cannot allocate %zu bytes for %s", bytes, what);
    return p;
}

void hc_start(int *argc, char ***argv, hc_run *r, const char *schema, const char *json)
{
    int me, n;
    rmx_mpi_start(argc, argv, PROG, PROG, 1, 0, &me, &n);   /* every count of ranks will do */
    rmx_mpirun_init(r, PROG, schema, json);
}

rmx_json *hc_point(hc_run *r, const char *form, int ranks, long long size, double value, double seconds,
                   int validated, const char *unit)
{
    if (r->me != 0)
        return NULL;
    r->invalid += !validated;
    if (r->table)
        printf("%-7s %6d ranks  size %14lld  %12.6f %-7s %10.4f s  %s\n", form, ranks, size, value / 1e9, unit, seconds,
               validated ? "PASSED" : "FAILED");
    rmx_json *j = rmx_mpirun_record(r, "point");
    if (!j)
        return NULL;
    rmx_json_str(j, "form", form);
    rmx_json_int(j, "ranks", ranks);
    rmx_json_int(j, "size", size);
    rmx_json_num(j, "value", value);
    rmx_json_num(j, "seconds", seconds);
    rmx_json_bool(j, "validated", validated);
    return j;
}

void hc_point_end(rmx_json *j, double lo, double hi, int rank)
{
    if (lo >= 0) {
        rmx_json_num(j, "value_min", lo);
        rmx_json_num(j, "value_max", hi);
    }
    if (rank >= 0)
        rmx_json_int(j, "rank", rank);
    rmx_json_obj_end(j);
}

int hc_finish(hc_run *r)
{
    rmx_json *j = rmx_mpirun_record(r, "done");
    if (j)
        rmx_json_int(j, "invalid", r->invalid);
    return rmx_mpirun_end(r);
}

uint64_t hc_shared_seed(void)
{
    int me;
    uint64_t seed = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0)
        seed = hc_mix((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32));
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return seed;
}

/* The rank that runs a "single" form, the same on every rank. */
static int hc_single_rank(void)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    uint64_t seed = hc_shared_seed();
    return n > 1 ? 1 + (int)(seed % (uint64_t)(n - 1)) : 0;   /* as HPCC: any rank but 0, which writes */
}

int hc_single(void (*kernel)(const void *args, void *result), const void *args, void *result, size_t bytes)
{
    int me, pick = hc_single_rank();
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    memset(result, 0, bytes);
    if (me == pick)
        kernel(args, result);
    MPI_Bcast(result, (int)bytes, MPI_BYTE, pick, MPI_COMM_WORLD);
    return pick;
}

void hc_star(double value, int ok, double *min, double *mean, double *max, int *all_ok)
{
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Allreduce(&value, min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&value, max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&value, mean, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *mean /= n;
    MPI_Allreduce(&ok, all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
}

double hc_max(double v)
{
    double out;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

uint64_t hc_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

double hc_uniform(uint64_t seed, uint64_t index)
{
    return (double)(hc_mix(seed * 0x2545F4914F6CDD1DULL ^ index) >> 11) * 0x1.0p-53 - 0.5;
}
