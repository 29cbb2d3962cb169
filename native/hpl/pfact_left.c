/* Left-looking walk: a piece is brought up to date with all the pieces to
 * its left just before it is factored; columns further right wait. */
#include "hpl.h"

void hpl_pf_left(hpl_pf *pf, int c0, int n, int np, hpl_pf_child child)
{
    for (int i = 0; i < np; i++) {
        const int c = hpl_pf_piece(c0, n, np, i), w = hpl_pf_piece(c0, n, np, i + 1) - c;
        if (c > c0) {
            hpl_pf_upd_trsm(pf, c0, c - c0, c, w);       /* its U rows above */
            hpl_pf_upd_lower(pf, c, c0, c - c0, c, w);   /* its rows below */
        }
        child(pf, c, w);
    }
}
