/* Collective operations behind one interface: set the inputs up from a
 * seed, run a batch, check the outputs. Every operation's result is
 * predictable from the seed, so each measurement validates itself. */
#ifndef RMAX_NET_COLL_H
#define RMAX_NET_COLL_H

#include "net.h"

typedef struct {
    MPI_Comm comm;
    int me, p;               /* rank and size in comm; rooted operations use root 0 */
    size_t size;             /* bytes per rank (per block for allgather and alltoall) */
    unsigned char *in, *out; /* each at least p * size bytes */
} net_coll;

typedef struct {
    const char *name;
    net_batch_fn run;                         /* ctx is a net_coll */
    void (*setup)(net_coll *c, uint64_t seed);
    size_t (*check)(const net_coll *c, uint64_t seed);   /* wrong bytes on this rank */
    int sized;                                /* 0: the size does not apply (barrier) */
    void (*istart)(net_coll *c, MPI_Request *r);   /* the non-blocking form, started */
} net_coll_op;

extern const net_coll_op net_coll_ops[];
extern const size_t net_coll_nops;

/* The self-test: rank 0 damages the last byte of its first input block (and of its output,
 * which bcast's root sends from) after setup, so that some rank's check must fail. */
void net_coll_damage(net_coll *c);

#endif
