"""Native code: the common library's unit tests (built here with CMake) and the kernels' contracts."""

import json
import subprocess
from pathlib import Path

import pytest

from rmax.native import executable

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def native_tests_dir() -> Path:
    """A separate build with RMAX_BUILD_TESTS=ON, so test executables never land in the user's bin/."""
    build = ROOT / "build" / "native-tests"
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DRMAX_BUILD_TESTS=ON",
                    "-DRMAX_WERROR=ON"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "test-common", "test-hpl"], check=True,
                   capture_output=True)
    return build / "native"


def test_common_library(native_tests_dir):
    proc = subprocess.run([str(native_tests_dir / "test-common")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.strip().endswith("0 failed")


def test_hpl_plans_and_memory_model(native_tests_dir):
    """rmax-hpl's broadcast plans (every variant: each rank receives each piece once), row-swap plan,
    numroc and memory model, checked as data (native/tests/test_hpl.c)."""
    proc = subprocess.run([str(native_tests_dir / "test-hpl")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.strip().endswith(" 0 failed")


def run(*args, timeout=120):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def test_peakflops_json_is_validated_and_complete():
    proc = run(executable("rmax-node"), "peakflops", "--json", "-", "--budget", "0.1", "--precision", "double",
               "--isa", "sse2", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(l) for l in proc.stdout.splitlines()]
    assert [r["threads"] for r in recs] == [1, 2]
    for r in recs:
        assert r["schema"] == "rmax.peakflops/1" and r["validated"] is True
        assert r["summary"]["n"] == len(r["samples"]) >= 5
        assert r["summary"]["min"] <= r["summary"]["median"] <= r["summary"]["max"]
        assert r["summary"]["median"] > 0.1  # GFLOPS: any working core does far more


@pytest.mark.parametrize("args, words", [
    (["peakflops", "--budget", "abc"], "--budget: 'abc' is not a number"),
    (["peakflops", "--budget", "-1"], "out of range"),
    (["peakflops", "--bogus"], "unknown option '--bogus'"),
    (["peakflops", "--isa", "neon"], "'neon' is not one of"),
    (["peakflops", "stray"], "unexpected argument 'stray'"),
    (["nosuch"], "unknown command 'nosuch'"),
])
def test_kernel_argument_errors_are_one_line(args, words):
    proc = run(executable("rmax-node"), *args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_ranks_probe_under_mpirun():
    from rmax.launch import LaunchSpec, prepare

    argv = prepare(LaunchSpec(program=[executable("rmax-ranks"), "--json", "-"], np=2), "mpirun")
    proc = run(*argv)
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    assert [r["rank"] for r in recs] == [0, 1]
    assert all(r["allreduce_ok"] and r["env"]["OPENBLAS_NUM_THREADS"] == "1" for r in recs)
    assert recs[0]["cpus"] != recs[1]["cpus"]  # bound to different cores
    assert "Open MPI" in recs[0]["mpi_library"]
