/* Crout walk: before a piece is factored its rows below are updated with the
 * pieces to the left (as left-looking); right after, its own U rows are
 * finished for every column to the right (so U is built row-block by row-block). */
#include "hpl.h"

void hpl_pf_crout(hpl_pf *pf, int c0, int n, int np, hpl_pf_child child)
{
    for (int i = 0; i < np; i++) {
        const int c = hpl_pf_piece(c0, n, np, i), w = hpl_pf_piece(c0, n, np, i + 1) - c;
        if (c > c0)
            hpl_pf_upd_lower(pf, c, c0, c - c0, c, w);
        child(pf, c, w);
        const int r = c + w, nr = c0 + n - r;
        if (nr > 0) {
            if (c > c0)
                hpl_pf_upd_tgemm(pf, c, w, c0, c - c0, r, nr);
            hpl_pf_upd_trsm(pf, c, w, r, nr);
        }
    }
}
