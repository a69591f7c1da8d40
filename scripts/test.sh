#!/usr/bin/env bash
# Run the Criterion suites through Meson and end with "N passed, N failed"
# summed from Criterion's synthesis lines. Extra arguments go to meson test.
set -uo pipefail
build=${BUILD:-build}
log=$(mktemp)
meson test -C "$build" -v --print-errorlogs "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
awk '/Synthesis: Tested:/ {
       for (i = 1; i <= NF; i++) {
         if ($i == "Passing:") p += $(i + 1)
         if ($i == "Failing:") f += $(i + 1)
         if ($i == "Crashing:") c += $(i + 1)
       }
     }
     END { printf "%d passed, %d failed\n", p, f + c }' "$log"
rm -f "$log"
exit $rc
