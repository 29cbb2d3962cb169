#include "rmx_names.h"
#include "rmx_args.h"

#include <stdlib.h>
#include <string.h>

size_t rmx_names(const char *prog, const char *opt, const char *what, const char *list, const char *const *names,
                 size_t n, int *chosen)
{
    size_t given = 0;
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        rmx_die(1, prog, "out of memory parsing --%s", opt);
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save), given++) {
        size_t k = 0;
        while (k < n && strcmp(names[k], tok) != 0)
            k++;
        if (k == n)
            rmx_die(2, prog, "--%s: unknown %s '%s'", opt, what, tok);
        if (chosen)
            chosen[k] = 1;
    }
    free(copy);
    return given;
}
