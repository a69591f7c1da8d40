#!/usr/bin/env bash
# Write the frames of the regression scenes with one build, to compare two
# builds byte for byte (a refactor must not change them):
#   scripts/frames_snapshot.sh build /tmp/frames-new
#   scripts/frames_snapshot.sh ../old/build /tmp/frames-old
#   diff -r /tmp/frames-old /tmp/frames-new   (run.yaml differs in times only)
#   for f in /tmp/frames-old/*/*.ply; do cmp "$f" "/tmp/frames-new/${f#/tmp/frames-old/}"; done
# Extra arguments go to every `floe run` (e.g. --backend opencl).
set -euo pipefail
build=${1:?usage: frames_snapshot.sh BUILD_DIR OUT_DIR [floe run args]}
out=${2:?usage: frames_snapshot.sh BUILD_DIR OUT_DIR [floe run args]}
shift 2
floe="$build/core/floe"
mkdir -p "$out"
run() { # name scene args...
  local name=$1 scene=$2
  shift 2
  "$floe" run "$scene" --out "$out/$name" --force --threads 2 "$@" >"$out/$name.log" 2>&1 ||
    { echo "frames_snapshot: $scene failed (log: $out/$name.log)" >&2; exit 1; }
}
run dam_break scenes/dam_break.lua --frames 4 "$@"
run dam_break_2d scenes/dam_break_2d.lua --frames 10 "$@"
run viscous_drop scenes/viscous_drop_on_wall.lua --frames 4 "$@"
run bench_wcsph scenes/bench/dam_break_59k.lua --set seconds=0.1 "$@"
run bench_iisph scenes/bench/iisph_dam_break_59k.lua --set seconds=0.1 "$@"
echo "frames_snapshot: $(find "$out" -name '*.ply' | wc -l) PLY frames in $out"
