#!/usr/bin/env bash
# Weak scaling of the MPI domain decomposition (branch mpi, docs/mpi.md) on
# the device host's 16 cores: the reference dam break (scenes/bench/
# dam_break_59k.lua, 59,319 particles) on 1 rank x 2 threads, against the
# same scene 4 times as long (--set length=4: 237,276 particles) on 4 ranks x
# 2 threads, each rank pinned to its own 2 cores with taskset. Prints the
# particle-steps/s of each run and the weak-scaling efficiency
#   (steps/s on 4 ranks with 4N) / (steps/s on 1 rank with N)   (asked: >= 0.8).
#
# The host has no MPI and no internet: Open MPI comes from Ubuntu 24.04
# (noble) .deb files unpacked under /opt/dep. Fetch them on a machine with
# the same release and internet, then copy them over:
#   apt-get download openmpi-bin openmpi-common libopenmpi3t64 libopenmpi-dev \
#       libpmix2t64 libhwloc15 libhwloc-plugins libevent-core-2.1-7t64 \
#       libevent-pthreads-2.1-7t64 libfabric1 libucx0 libibverbs1 librdmacm1t64 \
#       libnl-3-200 libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libefa1 libmunge2
#   (the closure of openmpi-bin and libopenmpi-dev's run-time dependencies
#   minus what the host has: `apt-cache depends --recurse --no-recommends
#   --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances
#   openmpi-bin libopenmpi3t64` lists it; this script prints the libraries
#   still missing, if any)
#   mkdir -p /opt/dep && for f in *.deb; do dpkg-deb -x "$f" /opt/dep; done
# Run from a checkout with a release build in build-dev/ (DEP=/opt/dep when
# Open MPI is unpacked there; DEP= for an installed Open MPI). Builds only
# (the build is reconfigured with -Dmpi=enabled against /opt/dep) and runs
# the benches: about 2-3 minutes (6 runs of 1000 steps after the build).
set -uo pipefail
cd "${1:-.}"   # the root of the checkout
DEP=${DEP-/opt/dep}
ML=$DEP/usr/lib/x86_64-linux-gnu
export OPAL_PREFIX=$DEP/usr
export LD_LIBRARY_PATH=$ML/openmpi/lib:$ML:${LD_LIBRARY_PATH:-}
export PATH=$DEP/usr/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
MPIRUN=$DEP/usr/bin/mpirun.openmpi
[ -x "$MPIRUN" ] || MPIRUN=$DEP/usr/bin/orterun
echo "== Open MPI from $DEP: $MPIRUN"
for b in "$MPIRUN" "$ML/openmpi/lib/libmpi.so"; do
  [ -e "$b" ] || { echo "missing: $b (unpack the .deb files listed in this script's header under $DEP)"; exit 1; }
  ldd "$b" | grep "not found" && echo "   ^ libraries missing for $b: add their packages under $DEP"
done
# meson finds Open MPI through ompi-c.pc; the unpacked one still says prefix=/usr
PC=$(mktemp -d)
sed "s|^prefix=.*|prefix=$DEP/usr|" "$ML/openmpi/lib/pkgconfig/ompi-c.pc" > "$PC/ompi-c.pc"
PKG_CONFIG_PATH=$PC:${PKG_CONFIG_PATH:-} meson setup --reconfigure build-dev -Dmpi=enabled > /tmp/mpi_meson.log 2>&1 \
  || { tail -20 /tmp/mpi_meson.log; exit 1; }
grep -i "dependency mpi" /tmp/mpi_meson.log
ninja -C build-dev > /tmp/mpi_ninja.log 2>&1 || { tail -30 /tmp/mpi_ninja.log; exit 1; }
FLOE=$PWD/build-dev/core/floe
SCENE=scenes/bench/dam_break_59k.lua
SECS=0.5   # 1000 steps of dt = 0.0005 s
OUT=$(mktemp -d)

one() {  # 1 rank x 2 threads on cores 2,3 ($1: extra --set)
  taskset -c 2,3 "$FLOE" bench $SCENE --threads 2 --set seconds=$SECS $1 --out "$OUT/one" 2>&1 \
    | grep -E "particle-steps/s" | tail -1
}
four() {  # 4 ranks x 2 threads, rank r on cores 2+2r, 3+2r, 4x the particles
  "$MPIRUN" --oversubscribe --bind-to none -np 4 sh -c \
    'c=$((2 + 2 * OMPI_COMM_WORLD_RANK)); exec taskset -c $c,$((c + 1)) "$0" "$@"' \
    "$FLOE" bench $SCENE --threads 2 --set seconds=$SECS --set length=4 --balance 2 $1 --out "$OUT/four" 2>&1 \
    | grep -E "particle-steps/s|mpi: load balance|error|rank" | tail -4
}
rate() { sed -n 's/.* \([0-9.]*\) steps\/s.*/\1/p' | tail -1; }

echo "== nproc $(nproc); $(lscpu | grep 'Model name' | sed 's/  */ /g')"
echo "== 1 rank x 2 threads, 59,319 particles (cores 2,3)"
R1a=$(one "" | tee /dev/stderr | rate)
echo "== 1 rank x 2 threads, neighbours in id order (what every rank does under MPI)"
R1i=$(one "--set neighbours.order=id" | tee /dev/stderr | rate)
echo "== 4 ranks x 2 threads, 237,276 particles (cores 2-9)"
R4a=$(four "" | tee /dev/stderr | rate)
grep -o "ranks: .*" "$OUT/four/run.yaml" | tail -1 | cut -c1-400
echo "== 4 independent 1-rank runs at once, each on its own 2 cores (2-9), no MPI: what sharing the"
echo "   socket's memory bandwidth and caches alone costs"
for r in 0 1 2 3; do
  c=$((2 + 2 * r))
  taskset -c $c,$((c + 1)) "$FLOE" bench $SCENE --threads 2 --set seconds=$SECS --out "$OUT/ind$r" > "$OUT/ind$r.log" 2>&1 &
done
wait
for r in 0 1 2 3; do grep -E "particle-steps/s" "$OUT/ind$r.log" | sed 's/.*simulated/copy: simulated/'; done
echo "== again: 1 rank, then 4 ranks"
R1b=$(one "" | tee /dev/stderr | rate)
R4b=$(four "" | tee /dev/stderr | rate)
echo "== weak-scaling efficiency (steps/s on 4 ranks with 4N over steps/s on 1 rank with N; asked >= 0.8)"
awk -v a="$R1a" -v b="$R1b" -v i="$R1i" -v c="$R4a" -v d="$R4b" 'BEGIN {
  printf "1 rank: %s, %s steps/s (id order: %s); 4 ranks: %s, %s steps/s\n", a, b, i, c, d;
  if (a > 0 && b > 0) printf "efficiency: run 1 %.3f, run 2 %.3f (best 4-rank / best 1-rank: %.3f)\n", c / a, d / b, (c > d ? c : d) / (a > b ? a : b) }'
rm -rf "$OUT" "$PC"
