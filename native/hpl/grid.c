/* The P x Q process grid: which rank sits where (PMAP) and the row and column
 * communicators every exchange runs on. Ranks beyond P*Q stay idle. */
#include "hpl.h"

void hpl_grid_init(hpl_grid *g, MPI_Comm world, int P, int Q, int pmap)
{
    int rank;
    MPI_Comm_rank(world, &rank);
    g->P = P;
    g->Q = Q;
    int in = rank < P * Q;
    MPI_Comm_split(world, in ? 0 : MPI_UNDEFINED, rank, &g->comm);
    g->row = g->col = MPI_COMM_NULL;
    if (!in) {
        g->myrow = g->mycol = g->iam = -1;
        return;
    }
    g->iam = rank;
    /* Row-major: consecutive ranks fill a process row; column-major: a column. */
    if (pmap == 0) {
        g->myrow = rank / Q;
        g->mycol = rank % Q;
    } else {
        g->myrow = rank % P;
        g->mycol = rank / P;
    }
    MPI_Comm_split(g->comm, g->myrow, g->mycol, &g->row);
    MPI_Comm_split(g->comm, g->mycol, g->myrow, &g->col);
    g->pmap = pmap;
}

int hpl_grid_rank(const hpl_grid *g, int row, int col)
{
    return g->pmap == 0 ? row * g->Q + col : col * g->P + row;
}

void hpl_grid_free(hpl_grid *g)
{
    if (g->row != MPI_COMM_NULL)
        MPI_Comm_free(&g->row);
    if (g->col != MPI_COMM_NULL)
        MPI_Comm_free(&g->col);
    if (g->comm != MPI_COMM_NULL)
        MPI_Comm_free(&g->comm);
}
