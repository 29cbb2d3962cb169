/* Output in the reference's format where parsers depend on it (the result
 * line, the residual line, the closing counts), in rmax's own words
 * elsewhere; and one JSON object per test (schema rmax.hpl/1). */
#include "hpl.h"
#include "rmx_json.h"

#include <string.h>

static const char RULE[] = "================================================================================";
static const char THIN[] = "--------------------------------------------------------------------------------";
static const char LRC[] = "LCR";
static const char *const fact_names[] = {"Left", "Crout", "Right"};
static const char *const bcast_names[] = {"1ring", "1ringM", "2ring", "2ringM", "Blong", "BlongM"};
static const char *const bcast_json[] = {"1ring", "1ringM", "2ring", "2ringM", "long", "longM"};
const char *const hpl_phase_names[HPL_PH_COUNT] = {"pfact", "swap", "bcast", "update", "solve", "check"};

void hpl_variant_code(const hpl_params *p, char *code, size_t len)
{
    snprintf(code, len, "W%c%d%d%c%d%c%d", p->pmap == 0 ? 'R' : 'C', p->depth, p->bcast, LRC[p->rfact], p->ndiv,
             LRC[p->pfact], p->nbmin);
}

static void list_int(FILE *f, const char *name, const int *v, int n)
{
    fprintf(f, "%-7s:", name);
    for (int i = 0; i < n; i++)
        fprintf(f, " %8d", v[i]);
    fputc('\n', f);
}

static void list_names(FILE *f, const char *name, const int *v, int n, const char *const *names)
{
    fprintf(f, "%-7s:", name);
    for (int i = 0; i < n; i++)
        fprintf(f, " %8s", names[v[i]]);
    fputc('\n', f);
}

void hpl_out_banner(FILE *f, const hpl_input *in, int nranks)
{
    fprintf(f, "%s\n", RULE);
    fprintf(f, "rmax-hpl: HPL-compatible dense LU benchmark (rmax). %d MPI rank%s.\n", nranks, nranks == 1 ? "" : "s");
    fprintf(f, "Input is read in the HPL.dat format; result lines follow the HPL layout.\n");
    fprintf(f, "%s\n\n", RULE);
    fprintf(f, "Columns of the result lines:\n");
    fprintf(f, "T/V    : variant code (W, mapping, depth, bcast, rfact, ndiv, pfact, nbmin)\n");
    fprintf(f, "N      : matrix order\n");
    fprintf(f, "NB     : block size\n");
    fprintf(f, "P, Q   : process rows and columns\n");
    fprintf(f, "Time   : seconds for factorisation and solve (slowest rank)\n");
    fprintf(f, "Gflops : (2/3 N^3 + 3/2 N^2) / Time / 1e9\n\n");
    fprintf(f, "Parameters of this run:\n\n");
    list_int(f, "N", in->n, in->nn);
    list_int(f, "NB", in->nb, in->nnb);
    fprintf(f, "PMAP   : %s\n", in->pmap == 0 ? "Row-major process mapping" : "Column-major process mapping");
    list_int(f, "P", in->p, in->ngrid);
    list_int(f, "Q", in->q, in->ngrid);
    list_names(f, "PFACT", in->pfact, in->npfact, fact_names);
    list_int(f, "NBMIN", in->nbmin, in->nnbmin);
    list_int(f, "NDIV", in->ndiv, in->nndiv);
    list_names(f, "RFACT", in->rfact, in->nrfact, fact_names);
    list_names(f, "BCAST", in->bcast, in->nbcast, bcast_names);
    list_int(f, "DEPTH", in->depth, in->ndepth);
    if (in->swap == HPL_SWAP_BINEXCH)
        fprintf(f, "SWAP   : Binary-exchange\n");
    else if (in->swap == HPL_SWAP_LONG)
        fprintf(f, "SWAP   : Spread-roll (long)\n");
    else
        fprintf(f, "SWAP   : Mix (threshold = %d)\n", in->swapthr);
    fprintf(f, "L1     : %s form\n", in->l1notran ? "no-transposed" : "transposed");
    fprintf(f, "U      : %s form\n", in->unotran ? "no-transposed" : "transposed");
    fprintf(f, "EQUIL  : %s\n", in->equil ? "yes" : "no");
    fprintf(f, "ALIGN  : %d double precision words\n\n", in->align);
    fprintf(f, "%s\n\n", THIN);
    fprintf(f, "- [A|b] comes from the reference's random generator (seed 100), regenerated for the check.\n");
    fprintf(f, "- Check: ||Ax-b||_oo / ( eps * ( || x ||_oo * || A ||_oo + || b ||_oo ) * N )\n");
    fprintf(f, "- eps (double precision unit roundoff)                             %e\n", 1.1102230246251565e-16);
    if (in->thresh > 0)
        fprintf(f, "- A test passes when the scaled residual is below                  %12.1f\n\n", in->thresh);
    else
        fprintf(f, "- The threshold is not positive: residual checks are skipped.\n\n");
    fflush(f);
}

void hpl_out_result(FILE *f, const hpl_result *r)
{
    char code[48]; /* W, R or C, BCAST, RFACT, PFACT, and DEPTH, NDIV, NBMIN of up to 10 digits each */
    hpl_variant_code(&r->prm, code, sizeof code);
    fprintf(f, "%s\n", RULE);
    fprintf(f, "T/V                N    NB     P     Q               Time                 Gflops\n");
    fprintf(f, "%s\n", THIN);
    fprintf(f, "%s%12d %5d %5d %5d %18.2f    %19.4e\n", code, r->prm.n, r->prm.nb, r->prm.p, r->prm.q, r->time,
            r->gflops);
    if (r->checked) {
        fprintf(f, "%s\n", THIN);
        fprintf(f, "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)= %16.8e ...... %s\n", r->chk.resid, r->status);
    }
    fflush(f);
}

void hpl_out_summary(FILE *f, int ntests, int npass, int nfail, int nskip)
{
    fprintf(f, "%s\n\n", RULE);
    fprintf(f, "Finished %6d tests with the following results:\n", ntests);
    fprintf(f, "         %6d tests completed and passed residual checks,\n", npass);
    fprintf(f, "         %6d tests completed and failed residual checks,\n", nfail);
    fprintf(f, "         %6d tests skipped because of illegal input values.\n", nskip);
    fprintf(f, "%s\n\nEnd of Tests.\n%s\n", THIN, RULE);
    fflush(f);
}

static void split_json(rmx_json *j, const char *key, const double *mx, const double *mn)
{
    rmx_json_obj_begin(j, key);
    for (int i = 0; i <= HPL_PH_COUNT; i++) {
        rmx_json_obj_begin(j, i < HPL_PH_COUNT ? hpl_phase_names[i] : "total");
        rmx_json_num(j, "max", mx[i]);
        rmx_json_num(j, "min", mn[i]);
        rmx_json_obj_end(j);
    }
    rmx_json_obj_end(j);
}

void hpl_out_json(FILE *f, const hpl_result *r)
{
    rmx_json j;
    char code[48]; /* W, R or C, BCAST, RFACT, PFACT, and DEPTH, NDIV, NBMIN of up to 10 digits each */
    const hpl_params *p = &r->prm;
    hpl_variant_code(p, code, sizeof code);
    rmx_json_init(&j, f);
    rmx_json_obj_begin(&j, NULL);
    rmx_json_str(&j, "schema", "rmax.hpl/1");
    rmx_json_str(&j, "kernel", "hpl");
    rmx_json_obj_begin(&j, "params");
    rmx_json_int(&j, "N", p->n);
    rmx_json_int(&j, "NB", p->nb);
    rmx_json_int(&j, "P", p->p);
    rmx_json_int(&j, "Q", p->q);
    rmx_json_str(&j, "PMAP", p->pmap == 0 ? "row" : "column");
    rmx_json_int(&j, "DEPTH", p->depth);
    rmx_json_str(&j, "BCAST", bcast_json[p->bcast]);
    rmx_json_str(&j, "RFACT", fact_names[p->rfact]);
    rmx_json_str(&j, "PFACT", fact_names[p->pfact]);
    rmx_json_int(&j, "NBMIN", p->nbmin);
    rmx_json_int(&j, "NDIV", p->ndiv);
    rmx_json_str(&j, "SWAP", p->swap == 0 ? "binary-exchange" : p->swap == 1 ? "long" : "mix");
    rmx_json_int(&j, "swap_threshold", p->swapthr);
    rmx_json_bool(&j, "L1_transposed", !p->l1notran);
    rmx_json_bool(&j, "U_transposed", !p->unotran);
    rmx_json_bool(&j, "equilibration", p->equil);
    rmx_json_int(&j, "alignment", p->align);
    rmx_json_num(&j, "threshold", p->thresh);
    rmx_json_obj_end(&j);
    rmx_json_str(&j, "variant", code);
    rmx_json_int(&j, "ranks", r->ranks);
    rmx_json_str(&j, "status", r->status);
    if (r->skip_reason)
        rmx_json_str(&j, "reason", r->skip_reason);
    rmx_json_num(&j, "time_s", r->time);
    rmx_json_num(&j, "gflops", r->gflops);
    rmx_json_num(&j, "flops", 2.0 / 3.0 * (double)p->n * p->n * p->n + 1.5 * (double)p->n * p->n);
    if (r->checked) {
        rmx_json_num(&j, "residual", r->chk.resid);
        rmx_json_obj_begin(&j, "norms");
        rmx_json_num(&j, "r_inf", r->chk.rnorm);
        rmx_json_num(&j, "A_inf", r->chk.anorm_inf);
        rmx_json_num(&j, "A_1", r->chk.anorm_1);
        rmx_json_num(&j, "x_inf", r->chk.xnorm_inf);
        rmx_json_num(&j, "x_1", r->chk.xnorm_1);
        rmx_json_num(&j, "b_inf", r->chk.bnorm_inf);
        rmx_json_obj_end(&j);
    } else {
        rmx_json_null(&j, "residual");
    }
    rmx_json_obj_begin(&j, "phases_s");
    for (int i = 0; i < HPL_PH_COUNT; i++) {
        rmx_json_obj_begin(&j, hpl_phase_names[i]);
        rmx_json_num(&j, "max", r->ph_max[i]);
        rmx_json_num(&j, "min", r->ph_min[i]);
        rmx_json_obj_end(&j);
    }
    rmx_json_obj_end(&j);
    /* The same phases split, rank by rank, into time blocked in MPI (waiting for peers,
     * with the copy a shared-memory transport makes inside the call) and the rest
     * (computing, packing, posting); "total" sums each rank's phases. */
    split_json(&j, "wait_s", r->wait_max, r->wait_min);
    split_json(&j, "compute_s", r->comp_max, r->comp_min);
    rmx_json_int(&j, "threads_per_rank", r->threads);
    rmx_json_bool(&j, "thread_team", r->team);
    rmx_json_num(&j, "bytes_sent_total", r->bytes_total);
    rmx_json_num(&j, "bytes_sent_max", r->bytes_max);
    rmx_json_obj_end(&j);
}
