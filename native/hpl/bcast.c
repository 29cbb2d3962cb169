/* The panel broadcast engine shared by the six topologies. A topology is a
 * plan: for this rank, an ordered list of non-blocking sends and receives
 * grouped in phases (a phase may start only when the previous one has
 * completed, e.g. forward after receiving). The engine posts a phase, and
 * hpl_bcast_test() moves on whenever it completes, so a caller can keep the
 * broadcast going between DGEMM chunks. The table below picks the plan. */
#include "hpl.h"

#include <stdlib.h>
#include <string.h>

static const hpl_bc_plan_fn plans[HPL_BC_COUNT] = {
    hpl_bc_plan_1ring, hpl_bc_plan_1ringm, hpl_bc_plan_2ring,
    hpl_bc_plan_2ringm, hpl_bc_plan_long, hpl_bc_plan_longm,
};

int hpl_bc_abs(const hpl_bcast *b, int rel) { return (rel + b->root) % b->size; }
int hpl_bc_rel(const hpl_bcast *b) { return (b->me - b->root + b->size) % b->size; }

void hpl_bc_add(hpl_bcast *b, int phase, int peer_rel, int recv, size_t off, size_t cnt)
{
    /* MPI counts are int: a longer piece goes as several messages, which both
     * ends split alike and post in order (one peer's messages do not overtake). */
    while (cnt > 0) {
        const size_t c = cnt < (size_t)INT_MAX ? cnt : (size_t)INT_MAX;
        if (b->nops == b->cap) {
            b->cap = b->cap ? 2 * b->cap : 8;
            hpl_bc_op *o = hpl_malloc((size_t)b->cap * sizeof *o, "the broadcast plan");
            if (b->nops)
                memcpy(o, b->ops, (size_t)b->nops * sizeof *o);
            free(b->ops);
            b->ops = o;
        }
        b->ops[b->nops++] = (hpl_bc_op){phase, hpl_bc_abs(b, peer_rel), recv, off, c};
        off += c;
        cnt -= c;
    }
}

void hpl_bc_plan_chain(hpl_bcast *b, const int *members, int n, int first_phase)
{
    const int me = hpl_bc_rel(b);
    for (int i = 0; i < n; i++) {
        if (members[i] != me)
            continue;
        int ph = first_phase;
        if (i > 0)
            hpl_bc_add(b, ph++, members[i - 1], 1, 0, b->len);
        if (i + 1 < n)
            hpl_bc_add(b, ph, members[i + 1], 0, 0, b->len);
    }
}

/* members[0] holds the buffer; it scatters n pieces, then the pieces travel
 * n-1 steps around the ring so that everybody ends with all of them. */
void hpl_bc_plan_spread_roll(hpl_bcast *b, const int *members, int n, int first_phase)
{
    const int me = hpl_bc_rel(b);
    int i = -1;
    for (int k = 0; k < n; k++)
        if (members[k] == me)
            i = k;
    if (i < 0 || n < 2)
        return;
#define PIECE_OFF(k) ((size_t)(k) * b->len / (size_t)n)
#define PIECE_CNT(k) (PIECE_OFF((k) + 1) - PIECE_OFF(k))
    if (i == 0)
        for (int k = 1; k < n; k++)
            hpl_bc_add(b, first_phase, members[k], 0, PIECE_OFF(k), PIECE_CNT(k));
    else
        hpl_bc_add(b, first_phase, members[0], 1, PIECE_OFF(i), PIECE_CNT(i));
    for (int s = 1; s < n; s++) {
        const int ph = first_phase + s;
        const int send = ((i - s + 1) % n + n) % n, recv = ((i - s) % n + n) % n;
        if (i + 1 < n) /* the last member does not send back to the root, which has it all */
            hpl_bc_add(b, ph, members[i + 1], 0, PIECE_OFF(send), PIECE_CNT(send));
        if (i > 0)
            hpl_bc_add(b, ph, members[i - 1], 1, PIECE_OFF(recv), PIECE_CNT(recv));
    }
#undef PIECE_OFF
#undef PIECE_CNT
}

static void post_phase(hpl_bcast *b)
{
    b->nreq = 0;
    if (b->next >= b->nops) {
        b->cur_phase = -1;
        b->done = 1;
        return;
    }
    b->cur_phase = b->ops[b->next].phase;
    /* The int casts below hold: hpl_bc_add splits pieces over INT_MAX. */
    while (b->next < b->nops && b->ops[b->next].phase == b->cur_phase) {
        const hpl_bc_op *o = &b->ops[b->next++];
        if (o->recv)
            MPI_Irecv(b->buf + o->off, (int)o->cnt, MPI_DOUBLE, o->peer, b->tag, b->comm, &b->req[b->nreq++]);
        else {
            MPI_Isend(b->buf + o->off, (int)o->cnt, MPI_DOUBLE, o->peer, b->tag, b->comm, &b->req[b->nreq++]);
            if (b->bytes)
                *b->bytes += 8.0 * (double)o->cnt;
        }
    }
}

static int cmp_phase(const void *x, const void *y)
{
    const hpl_bc_op *a = x, *c = y;
    return a->phase - c->phase;
}

void hpl_bcast_plan(hpl_bcast *b, int variant)
{
    if (b->size > 1 && b->len > 0)
        plans[variant](b);
    /* Stable order keeps the posting order of sends/receives to one peer. */
    for (int i = 1; i < b->nops; i++)
        for (int k = i; k > 0 && cmp_phase(&b->ops[k - 1], &b->ops[k]) > 0; k--) {
            hpl_bc_op t = b->ops[k];
            b->ops[k] = b->ops[k - 1];
            b->ops[k - 1] = t;
        }
}

void hpl_bcast_start(hpl_bcast *b, int variant, MPI_Comm comm, int root, double *buf, size_t len, int tag,
                     double *bytes)
{
    memset(b, 0, sizeof *b);
    b->comm = comm;
    b->root = root;
    b->buf = buf;
    b->len = len;
    b->tag = tag;
    b->bytes = bytes;
    MPI_Comm_rank(comm, &b->me);
    MPI_Comm_size(comm, &b->size);
    hpl_bcast_plan(b, variant);
    b->req = hpl_malloc((size_t)(b->nops > 0 ? b->nops : 1) * sizeof *b->req, "the broadcast's requests");
    post_phase(b);
}

int hpl_bcast_test(hpl_bcast *b)
{
    while (!b->done) {
        int flag = 1;
        if (b->nreq)
            MPI_Testall(b->nreq, b->req, &flag, MPI_STATUSES_IGNORE);
        if (!flag)
            return 0;
        post_phase(b);
    }
    return 1;
}

void hpl_bcast_free(hpl_bcast *b)
{
    free(b->ops);
    free(b->req);
    b->ops = NULL;
    b->req = NULL;
    b->nops = b->cap = 0;
}

void hpl_bc_send_next_first(hpl_bcast *b)
{
    const int me = hpl_bc_rel(b);
    if (me == 1)
        hpl_bc_add(b, 0, 0, 1, 0, b->len);
    if (me == 0)
        hpl_bc_add(b, 0, 1, 0, 0, b->len);
}

void hpl_bc_plan_rest(hpl_bcast *b, void (*plan)(hpl_bcast *, const int *, int, int))
{
    if (b->size < 3)
        return;
    int *m = hpl_malloc((size_t)b->size * sizeof *m, "the broadcast's member list");
    int n = 0;
    m[n++] = 0;
    for (int i = 2; i < b->size; i++)
        m[n++] = i;
    plan(b, m, n, 0);
    free(m);
}
