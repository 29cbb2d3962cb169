#!/usr/bin/env bash
# Installs the Debian packages rmax builds against and measures with.
# Quick when everything is present: apt-get runs only for what is missing.
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config
    python3 python3-venv python3-dev
    openmpi-bin libopenmpi-dev             # MPI (default launcher: mpirun)
    mpich libmpich-dev                     # second MPI implementation (mpiexec.mpich, mpicc.mpich): rmax's MPI
                                           # executables are built once per MPI (native/mpi/builds.cmake)
    libopenblas-dev libblas-dev            # system BLAS (libblas.so.3 alternatives)
    libblis4-pthread libatlas3-base libblas3   # other BLAS to compare at run time
    hwloc libhwloc-dev                     # topology (lstopo) for the inventory
    ethtool iproute2 procps                # NIC settings, network namespaces
    sqlite3                                # results store inspection by hand
    slurm-client                           # srun and sbatch for the Slurm launcher
    slurmctld slurmd munge                 # a real Slurm inside the virtual cluster (rmax vcluster up --slurm)
    slurmdbd mariadb-server-core mariadb-client-core   # its accounting, so that sacct works there
    prometheus                             # the agent's tests scrape it with a real Prometheus server
    chromium fonts-dejavu-core             # report tests render the HTML report headless
    hpcc netpipe-openmpi netpipe-tcp       # peer tools the benchmarks compare against
    libfftw3-dev libfftw3-mpi-dev         # FFTW and its MPI interface (rmax-hpcc fft)

)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "rmax: missing system packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "rmax: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Daemons among these packages (munge, slurmctld, slurmd, prometheus) must not start on install:
# rmax starts its own, on loopback or inside namespaces, and stops them by PID.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
fi
trap '[ "$own_policy" = 1 ] && rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
