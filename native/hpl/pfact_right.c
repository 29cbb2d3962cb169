/* Right-looking walk: factor a piece, then bring every column to its right
 * up to date at once (U rows by a triangular solve, the rows below by DGEMM). */
#include "hpl.h"

void hpl_pf_right(hpl_pf *pf, int c0, int n, int np, hpl_pf_child child)
{
    for (int i = 0; i < np; i++) {
        const int c = hpl_pf_piece(c0, n, np, i), w = hpl_pf_piece(c0, n, np, i + 1) - c;
        child(pf, c, w);
        const int r = c + w, nr = c0 + n - r;
        if (nr > 0) {
            hpl_pf_upd_trsm(pf, c, w, r, nr);
            hpl_pf_upd_lower(pf, r, c, w, r, nr);
        }
    }
}
