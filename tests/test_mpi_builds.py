"""rmax's MPI executables once per MPI (native/mpi/builds.cmake, docs/MPI.md): each build says what
it is, each launcher runs its own MPI's build (--mpi chooses one), a sub-command a build left out
is refused before a run, the site's own wrapper builds one more, and compare names an MPI change."""

import json
import os
import shutil
import subprocess

import pytest
from cliutil import ROOT, assert_one_line_error, run_cli

from rmax.errors import RmaxError
from rmax.launch import LaunchSpec, get_launcher
from rmax.native import executable, mpi_builds

pytestmark = pytest.mark.skipif("mpich" not in mpi_builds(), reason="no MPICH build of rmax's MPI executables")


def test_each_build_says_which_mpi_it_loads():
    builds = mpi_builds()
    assert list(builds)[:2] == ["openmpi", "mpich"]    # Open MPI's first: the plain names
    ompi, mpich = builds["openmpi"], builds["mpich"]
    assert (ompi.suffix, ompi.implementation, ompi.family) == ("", "Open MPI", "Open MPI")
    assert (mpich.suffix, mpich.implementation, mpich.family) == (".mpich", "MPICH", "MPICH")
    assert mpich.wrapper.endswith("mpicc.mpich") and mpich.version.count(".") == 2
    out = json.loads(subprocess.run([executable("rmax-ranks", mpi="mpich"), "--mpi-build"], capture_output=True,
                                    text=True, check=True, timeout=30).stdout)
    assert out["build"] == "mpich" and out["library"].startswith("MPICH Version:")


def test_each_launcher_runs_its_own_mpis_build(monkeypatch):
    monkeypatch.delenv("RMAX_MPI", raising=False)
    for name, exe in (("mpirun", "rmax-ranks"), ("mpiexec", "rmax-ranks.mpich")):
        spec = LaunchSpec(program=[executable("rmax-ranks"), "--json", "-"], np=2)
        argv = get_launcher(name).argv(spec)
        assert os.path.basename(argv[-3]) == exe and argv[-2:] == ["--json", "-"]
        assert spec.mpi["build"] == ("openmpi" if name == "mpirun" else "mpich")
        assert get_launcher(name).argv(spec)[-3] == argv[-3]          # a second launch of the spec: the same
    # --mpi (RMAX_MPI): the default launcher is the build's; another MPI's launcher is refused
    monkeypatch.setenv("RMAX_MPI", "mpich")
    assert get_launcher().name == "mpiexec"
    with pytest.raises(RmaxError, match="the mpirun launcher starts Open MPI jobs, but RMAX_MPI=mpich"):
        get_launcher("mpirun").argv(LaunchSpec(program=[executable("rmax-net"), "p2p"], np=2))


def test_a_sub_command_the_build_left_out_is_refused_before_a_run(db):
    # Debian's FFTW MPI interface is Open MPI's: the MPICH build of rmax-hpcc has no fft
    assert_one_line_error(run_cli("bench", "fft", "--np", "2", "--mpi", "mpich"), 2,
                          "the mpich build of rmax-hpcc (rmax-hpcc.mpich) has no fft", "--mpi openmpi")
    assert_one_line_error(run_cli("bench", "gups", "--np", "2", "--mpi", "nompi"), 2, "no nompi build")
    assert json.loads(run_cli("runs", "list", "--json", check=True).stdout) == []
    info = json.loads(run_cli("info", "--json", check=True).stdout)["mpi"]["builds"]
    assert [(b["build"], b["missing"]) for b in info] == [("openmpi", []), ("mpich", ["rmax-hpcc fft"])]


def test_compare_names_the_mpi_a_run_ran_under(db):
    ids = []
    for mpi in ("openmpi", "mpich"):
        rec = json.loads(run_cli("bench", "mlat", "--sizes", "0,9", "--budget", "0.002", "--mpi", mpi, "--json",
                                 check=True, timeout=120).stdout)
        assert rec["status"] == "ok" and rec["environment"]["mpi"]["build"] == mpi
        ids.append(rec["id"])
    notes = json.loads(run_cli("compare", *ids, "--json", check=True).stdout)["notes"]
    assert any(n.startswith("A ran under Open MPI ") and " and B under MPICH " in n for n in notes), notes
    # the same MPI on both sides: no such note
    again = json.loads(run_cli("bench", "mlat", "--sizes", "0,9", "--budget", "0.002", "--mpi", "mpich", "--json",
                               check=True, timeout=120).stdout)["id"]
    assert not any("a different MPI" in n for n in json.loads(run_cli("compare", ids[1], again, "--json",
                                                                      check=True).stdout)["notes"])


def test_the_sites_own_wrapper_builds_a_site_build_its_launcher_runs(db, tmp_path):
    """RMAX_MPICC names the site's wrapper (here MPICH's, as an Intel MPI one would be): its build is
    rmax-ranks.site, it says so, and --mpi site runs it through the launcher RMAX_MPIEXEC names."""
    build = tmp_path / "build"
    env = {**os.environ, "RMAX_MPICC": shutil.which("mpicc.mpich")}
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja"], env=env, check=True,
                   capture_output=True, timeout=300)
    subprocess.run(["cmake", "--build", str(build), "--target", "rmax-ranks", "rmax-ranks.site"], check=True,
                   capture_output=True, timeout=300)
    site = build / "native" / "rmax-ranks.site"
    out = json.loads(subprocess.run([str(site), "--mpi-build"], capture_output=True, text=True, check=True).stdout)
    assert out["build"] == "site" and out["wrapper"] == shutil.which("mpicc.mpich") and "MPICH" in out["library"]
    env = {"RMAX_NATIVE_DIR": str(build / "native"), "RMAX_MPIEXEC": shutil.which("mpiexec.mpich")}
    rec = json.loads(run_cli("launch", "check", "--np", "2", "--mpi", "site", "--json", env=env, check=True,
                             timeout=120).stdout)
    assert rec["status"] == "ok" and rec["environment"]["mpi"]["build"] == "site"
    assert rec["argv"][-3] == str(site) and shutil.which("mpiexec.mpich") in rec["argv"]
