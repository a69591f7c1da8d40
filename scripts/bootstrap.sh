#!/usr/bin/env bash
# Install what Floe needs to build and test on Debian/Ubuntu (idempotent):
# compiler, Meson/Ninja, Lua 5.4, libyaml, Criterion, OpenMP (with gcc), and
# for the OpenCL backend's tests the Khronos headers, the ICD loader and PoCL;
# assimp for meshes from files and its test models (the Utah teapot);
# PyYAML and matplotlib for the reports of floe compare and floe validate;
# GLFW 3 and libepoxy for floe view, with Xvfb and Mesa's software OpenGL
# (llvmpipe) for its tests on machines without a display or GPU;
# Open MPI (libopenmpi-dev, openmpi-bin) for mpirun -np N floe run (docs/mpi.md);
# valgrind with FLOE_WITH_VALGRIND=1, clang and libFuzzer with FLOE_WITH_FUZZ=1.
# Does nothing when everything is already there.
set -euo pipefail

pkgs=(gcc pkg-config meson ninja-build python3 python3-yaml python3-matplotlib liblua5.4-dev libyaml-dev
      libcriterion-dev libpng-dev
      libassimp-dev assimp-testmodels libode-dev
      libglfw3-dev libepoxy-dev xvfb libgl1-mesa-dri
      pocl-opencl-icd ocl-icd-libopencl1 opencl-c-headers
      libopenmpi-dev openmpi-bin)
[ "${FLOE_WITH_VALGRIND:-0}" = 1 ] && pkgs+=(valgrind)
# make fuzz: clang and its libFuzzer runtime (not pulled in by clang without
# recommends), for the default clang version of the distribution
if [ "${FLOE_WITH_FUZZ:-0}" = 1 ]; then
  clang_v=$(apt-cache depends clang 2>/dev/null | sed -n 's/.*Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
  pkgs+=(clang ${clang_v:+libclang-rt-$clang_v-dev})
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "bootstrap: missing packages (${missing[*]}) and no apt-get; install them by hand" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "bootstrap: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
