#!/usr/bin/env bash
# Weak scaling of the MPI domain decomposition (branch mpi, docs/mpi.md) on
# the H200 host's 16 cores: the reference dam break (scenes/bench/
# dam_break_59k.lua, 59,319 particles) on 1 rank x 2 threads, against the
# same scene 4 times as long (--set length=4: 237,276 particles) on 4 ranks x
# 2 threads, each rank pinned to its own 2 cores with taskset; then 8 ranks
# x 2 threads (all 16 cores) on --set length=8. Prints the particle-steps/s
# of each run, each rank's breakdown of a step (migration, ghosts, halos,
# reductions; of each the time inside MPI calls, waits for the other ranks
# included), and the weak-scaling efficiency
#   (particle-steps/s on 4 ranks with 4N) / (4 x particle-steps/s on 1 rank with N)
# (asked: >= 0.8), also against 4 independent one-process copies run at once
# (what sharing the memory system alone costs, no MPI).
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
# the benches: about 2-3 minutes after the build.
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

one() {  # 1 rank x 2 threads on cores 2,3 ($1: extra options)
  taskset -c 2,3 "$FLOE" bench $SCENE --threads 2 --set seconds=$SECS $1 --out "$OUT/one" > "$OUT/one.log" 2>&1
  grep -E "particle-steps/s" "$OUT/one.log" | tail -1
}
ranks() {  # $1 ranks x 2 threads, rank r on cores $2+2r, $2+2r+1, $1 times the particles ($3: extra options;
           # its leading NAME=VALUE words set the run's environment, e.g. "FLOE_MPI_FIT=0 --mpi-skin 0")
  local envs=() opts=() w
  for w in $3; do
    if [ ${#opts[@]} -eq 0 ] && [[ $w == [A-Z]*=* ]]; then envs+=("$w"); else opts+=("$w"); fi
  done
  env ${envs[@]+"${envs[@]}"} "$MPIRUN" --oversubscribe --bind-to none -np "$1" sh -c \
    'c=$(('"$2"' + 2 * OMPI_COMM_WORLD_RANK)); exec taskset -c $c,$((c + 1)) "$0" "$@"' \
    "$FLOE" bench $SCENE --threads 2 --set seconds=$SECS --set "${SCALE:-length}"="$1" --balance 2 ${opts[@]+"${opts[@]}"} ${RANK_OPTS:-} \
    --out "$OUT/r$1" \
    > "$OUT/r$1.log" 2>&1
  grep -E "mpi: [0-9]|mpi: load balance|error" "$OUT/r$1.log" | head -4
  grep -E "ms per step" "$OUT/r$1.log" | sed 's/^floe: info: mpi: //'
  grep -E "particle-steps/s" "$OUT/r$1.log" | tail -1
}
rate() { sed -n 's/.* \([0-9.e+]*\) particle-steps\/s.*/\1/p' | tail -1; }

echo "== nproc $(nproc); $(lscpu | grep 'Model name' | sed 's/  */ /g')"
if [ "${PAIRS_ONLY:-0}" != 1 ]; then
echo "== 1 rank x 2 threads, 59,319 particles (cores 2,3)"
L=$(one ""); echo "$L"; P1a=$(echo "$L" | rate)
echo "== 4 independent 1-rank runs at once, each on its own 2 cores (2-9), no MPI: what sharing the"
echo "   memory system alone costs"
for r in 0 1 2 3; do
  c=$((2 + 2 * r))
  taskset -c $c,$((c + 1)) "$FLOE" bench $SCENE --threads 2 --set seconds=$SECS --out "$OUT/ind$r" > "$OUT/ind$r.log" 2>&1 &
done
wait
PI=0
for r in 0 1 2 3; do
  L=$(grep -E "particle-steps/s" "$OUT/ind$r.log" | tail -1); echo "copy $r: ${L#*simulated in }"
  PI=$(awk -v a="$PI" -v b="$(echo "$L" | rate)" 'BEGIN { print a + b }')
done
echo "== 4 ranks x 2 threads, --set length=4: 241,839 particles (cores 2-9)"
L=$(ranks 4 2 ""); echo "$L"; P4a=$(echo "$L" | rate)
echo "== again: 1 rank, then 4 ranks"
L=$(one ""); echo "$L"; P1b=$(echo "$L" | rate)
L=$(ranks 4 2 ""); echo "$L"; P4b=$(echo "$L" | rate)
echo "== 1 rank x 2 threads on --set length=4 (241,839 particles, 400 steps, cores 2,3): does the longer"
echo "   scene alone (4 times the tank, the domain) cost per particle, as every rank holds it whole?"
SECS=0.2
L=$(one "--set length=4"); echo "$L"; P1L=$(echo "$L" | rate)
awk -v a="$P1L" -v b="$P1b" 'BEGIN { if (b > 0) printf "per particle against the 59k run: %.3f\n", a / b }'
echo "== 8 ranks x 2 threads, --set length=8 (all 16 cores, 0-15), 0.25 s"
SECS=0.25
L=$(ranks 8 0 ""); echo "$L"; P8=$(echo "$L" | rate)
echo "== weak-scaling efficiency: particle-steps/s on k ranks / (k x particle-steps/s on 1 rank); asked >= 0.8"
awk -v a="$P1a" -v b="$P1b" -v c="$P4a" -v d="$P4b" -v i="$PI" -v e="$P8" 'BEGIN {
  one = a > b ? a : b; four = c > d ? c : d;
  printf "1 rank: %s, %s particle-steps/s; 4 independent copies: %s in all; 4 ranks: %s, %s; 8 ranks: %s\n", a, b, i, c, d, e;
  if (one > 0) printf "efficiency, 4 ranks: run 1 %.3f, run 2 %.3f, best/best %.3f; 8 ranks %.3f\n", c / (4 * a), d / (4 * b), four / (4 * one), e / (8 * one);
  if (i > 0) printf "4 independent copies / (4 x 1 rank): %.3f (the memory system); 4 ranks / 4 copies: %.3f (the decomposition)\n", i / (4 * one), four / i }'
fi
# PAIRS=K (default 0): then K more pairs, each a 1-rank run directly followed by a
# 4-rank run, and the median of the pairs' efficiencies. On a shared host whose
# speed moves between runs (docs/performance.md: 1.6x within half an hour on the
# H200 host) a pair's ratio is steadier than the best of separate runs.
# VARIANTS="opts A|opts B" (with PAIRS): each pair's 1-rank run is followed by
# one 4-rank run per variant, in turn, with those options added (e.g.
# VARIANTS="--mpi-skin 0|--mpi-skin 0.5"; leading NAME=VALUE words go into
# the run's environment: VARIANTS="FLOE_MPI_FIT=0|FLOE_MPI_FIT=1"), and a
# median per variant.
# SCALE=width (default length): the 4-rank scene is 4 times as wide (along z,
# cut into slabs along z: add --decomp slabs) instead of 4 times as long.
# PAIRS_ONLY=1: the pairs alone (the runs above skipped).
if [ "${PAIRS:-0}" -gt 0 ]; then
  SECS=0.5
  IFS='|' read -r -a VAR <<< "${VARIANTS:-}"
  [ ${#VAR[@]} -eq 0 ] && VAR=("")
  echo "== $PAIRS pairs: 1 rank, then 4 ranks (${SCALE:-length} = 4) with each of: ${VARIANTS:-the defaults}"
  declare -a E
  for k in $(seq "$PAIRS"); do
    a=$(one "" | rate); line="pair $k: 1 rank $a"
    for v in "${!VAR[@]}"; do
      R=$(ranks 4 2 "${VAR[$v]}"); b=$(echo "$R" | rate)
      [ "$k" = 1 ] && echo "$R" | grep -E "^rank [0-9], ms per step" | cut -c1-300
      e=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.3f", b / (4 * a) }')
      line="$line; [${VAR[$v]}] 4 ranks $b: efficiency $e"; E[$v]="${E[$v]:-} $e"
    done
    echo "$line"
  done
  for v in "${!VAR[@]}"; do
    echo "${E[$v]}" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk -v name="${VAR[$v]}" '{ v[NR] = $1 } END {
      if (NR) printf "[%s] median of %d pairs: %.3f (range %.3f-%.3f)\n", name, NR, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'
  done
fi
rm -rf "$OUT" "$PC"
