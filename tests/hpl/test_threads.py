"""Threaded ranks (BLAS threads > 1) run the updates as a thread team (the
swaps split over the threads, the look-ahead panel factored on one thread
during the update): every variant must still pass the residual check, and the
JSON must say the team ran. 2 threads per rank on the 2-core machine; small N
so that oversubscription stays cheap."""

import json

import pytest

NS = (13, 97, 300)            # below NB, not a multiple of NB, several panels
DEPTH = (0, 1, 2)
PFACT = (0, 2)
RFACT = (1, 2)


@pytest.mark.parametrize("grid", [(1, 1), (1, 2)], ids=lambda g: f"{g[0]}x{g[1]}")
def test_thread_team_all_variants_pass(tmp_path, hpl_run, hpl_dat, grid):
    P, Q = grid
    (tmp_path / "HPL.dat").write_text(hpl_dat(NS, (16,), P, Q, depth=DEPTH, pfact=PFACT, rfact=RFACT,
                                              bcast=(1,), u=1, l1=1))
    r = hpl_run(tmp_path, np=P * Q, args=["--json", "o.json"], timeout=300,
                env_extra={"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2",
                           # unbound: OpenBLAS runs no more threads than the CPUs a rank may use
                           "OMPI_MCA_hwloc_base_binding_policy": "none"})
    assert r.returncode == 0, r.stderr
    objs = [json.loads(l) for l in (tmp_path / "o.json").read_text().splitlines()]
    assert len(objs) == len(NS) * len(DEPTH) * len(PFACT) * len(RFACT)
    assert all(o["status"] == "PASSED" for o in objs), [o["variant"] for o in objs if o["status"] != "PASSED"]
    assert all(o["threads_per_rank"] == 2 and o["thread_team"] for o in objs)


# With P > 1 U is gathered into a work array, in either form, by every SWAP
# variant, the first thread exchanging the rows piece by piece of columns while
# the others update (N = 1100: several pieces); with DEPTH 2 the first thread
# also updates the look-ahead panel's columns (their own U) while the team uses
# the trailing U.
FORMS = [(0, 0, 0, 0), (1, 1, 1, 1), (2, 0, 1, 0), (2, 1, 0, 1)]  # SWAP, L1, U, equilibration


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"swap{f[0]}-l1{f[1]}-u{f[2]}-eq{f[3]}")
def test_thread_team_with_process_rows(tmp_path, hpl_run, hpl_dat, form):
    swap, l1, u, equil = form
    grid = (2, 2) if swap == 2 and u == 0 else (2, 1)
    (tmp_path / "HPL.dat").write_text(hpl_dat((97, 300, 1100), (16,), *grid, depth=DEPTH, pfact=(2,), rfact=(1,),
                                              bcast=(1,), swap=swap, swapthr=20, l1=l1, u=u, equil=equil))
    r = hpl_run(tmp_path, np=grid[0] * grid[1], args=["--json", "o.json"], timeout=300,
                env_extra={"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2",
                           "OMPI_MCA_hwloc_base_binding_policy": "none"})
    assert r.returncode == 0, r.stderr
    objs = [json.loads(l) for l in (tmp_path / "o.json").read_text().splitlines()]
    assert len(objs) == 3 * len(DEPTH)
    assert all(o["status"] == "PASSED" for o in objs), [o["variant"] for o in objs if o["status"] != "PASSED"]
    assert all(o["threads_per_rank"] == 2 and o["thread_team"] for o in objs)


@pytest.mark.parametrize("threads", [[2, 1], [2, 1, 2, 1]], ids=["2x1", "2x2"])
def test_ranks_with_and_without_threads_in_one_grid(tmp_path, hpl_run, hpl_dat, threads):
    """The ranks of a process column exchange rows and factor panels together, and a team does
    both in another order: a column with a single-threaded rank runs no team (2 x 1: MPI
    reported a truncated message when the 2-thread rank ran one), while another column may
    (2 x 2: column 0 has 2 threads per rank, column 1 one)."""
    P, Q = (2, 1) if len(threads) == 2 else (2, 2)
    (tmp_path / "HPL.dat").write_text(hpl_dat((300, 1100), (16,), P, Q, depth=DEPTH, swap=1, equil=1))
    r = hpl_run(tmp_path, np=P * Q, args=["--json", "o.json"], timeout=300, threads=threads,
                env_extra={"OMPI_MCA_hwloc_base_binding_policy": "none"})
    assert r.returncode == 0, r.stderr
    objs = [json.loads(l) for l in (tmp_path / "o.json").read_text().splitlines()]
    assert len(objs) == 2 * len(DEPTH) and all(o["status"] == "PASSED" for o in objs)
    # rank 0's: 2 threads; a team where its whole column has threads
    assert all(o["threads_per_rank"] == 2 and o["thread_team"] == (Q == 2) for o in objs)


def test_single_threaded_ranks_run_no_team(tmp_path, hpl_run, hpl_dat):
    (tmp_path / "HPL.dat").write_text(hpl_dat((97,), (16,), 1, 2))
    r = hpl_run(tmp_path, np=2, args=["--json", "o.json"])
    assert r.returncode == 0, r.stderr
    o = json.loads((tmp_path / "o.json").read_text())
    assert o["status"] == "PASSED" and o["threads_per_rank"] == 1 and not o["thread_team"]
