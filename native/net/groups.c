/* Switch groups given by the caller (declared in cluster.toml, a virtual
 * cluster's plan, or inferred from stored matrices): which group each rank's
 * host belongs to, and the ranks ordered group by group. */
#include "net.h"

#include <stdlib.h>
#include <string.h>

/* Group index of `host` in spec ("a,b;c,d"), or -1. */
static int group_of_host(const char *spec, const char *host)
{
    int g = 0;
    size_t len = strlen(host);
    for (const char *p = spec; *p;) {
        size_t k = strcspn(p, ",;");
        if (k == len && strncmp(p, host, k) == 0)
            return g;
        p += k;
        if (*p == ';')
            g++;
        if (*p)
            p++;
    }
    return -1;
}

int net_group_order(const char *spec, char (*hosts)[64], int n, int *order, int *group_of)
{
    int groups = 0, max_g = -1;
    for (int r = 0; r < n; r++) {
        group_of[r] = group_of_host(spec, hosts[r]);
        if (group_of[r] < 0)
            return -1;
        max_g = group_of[r] > max_g ? group_of[r] : max_g;
    }
    int k = 0;
    for (int g = 0; g <= max_g; g++) {
        int seen = 0;
        for (int r = 0; r < n; r++)
            if (group_of[r] == g) {
                order[k++] = r;
                seen = 1;
            }
        groups += seen;
    }
    return groups;
}
