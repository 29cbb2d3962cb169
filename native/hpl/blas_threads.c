/* How many threads the BLAS runs, read and set at run time whichever library
 * libblas.so.3 turns out to be. A threaded rank (one rank, many BLAS threads)
 * runs its own team during the factorisation, so that the panel and the swaps
 * do not run on one thread while the others wait: every team thread then calls
 * the BLAS with one thread. The setters are looked up by name because the BLAS
 * is chosen at run time (Debian alternatives, LD_LIBRARY_PATH); a BLAS without
 * one (the reference BLAS, ATLAS) keeps its own threading and no team runs. */
#include "hpl.h"

#include <dlfcn.h>

typedef struct {
    const char *get, *set;
} blas_threads_api;

/* OpenBLAS (openblas_* in its libblas.so.3), BLIS, MKL. */
static const blas_threads_api apis[] = {
    {"openblas_get_num_threads", "openblas_set_num_threads"},
    {"bli_thread_get_num_threads", "bli_thread_set_num_threads"},
    {"MKL_Get_Max_Threads", "MKL_Set_Num_Threads"},
};

static int (*get_fn)(void);
static void (*set_fn)(int);

int hpl_blas_threads(void)
{
    static int known = 0;
    if (!known) {
        known = 1;
        for (size_t i = 0; i < sizeof apis / sizeof apis[0] && !set_fn; i++) {
            void *g = dlsym(RTLD_DEFAULT, apis[i].get), *s = dlsym(RTLD_DEFAULT, apis[i].set);
            if (g && s) {
                *(void **)&get_fn = g;
                *(void **)&set_fn = s;
            }
        }
    }
    if (!get_fn)
        return 1;
    const int n = get_fn();
    return n > 1 ? n : 1;
}

void hpl_blas_set_threads(int n)
{
    if (set_fn && n >= 1)
        set_fn(n);
}
