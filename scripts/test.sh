#!/usr/bin/env bash
# Sets up and builds kiln (scripts/setup.sh), then runs the whole test suite:
# lit (dialect/pass FileCheck tests, driver tests, the runtime's gtest,
# end-to-end tests against onnxruntime-node), the ONNX conformance runner,
# which fails when fewer tests pass than test/conformance/floor.txt (and
# again with --target=vulkan against floor-vulkan.txt, on lavapipe), and
# scripts/sanitize.sh (lit again on an ASan+UBSan build, then 30,000
# fuzzed models through the importer).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
/usr/lib/llvm-22/bin/lit -sv build/test | tee build/lit.log | grep -vE "^(PASS|UNSUPPORTED):"
conformance_rc=0
/usr/bin/python3 test/conformance/run.py --check-floor --report build/CONFORMANCE.md || conformance_rc=$?
# The same suite compiled with --target=vulkan, on the machine's Vulkan
# device (lavapipe in CI), against its own floor.
vulkan_rc=0
if vulkaninfo --summary 2>/dev/null | grep -q deviceName; then
  /usr/bin/python3 test/conformance/run.py --target vulkan --check-floor \
    --report build/CONFORMANCE-vulkan.md || vulkan_rc=$?
else
  echo "test: no Vulkan device: the --target=vulkan conformance run is skipped"
fi
echo "test: sanitizers and fuzzing (scripts/sanitize.sh; log in build/sanitize.log)"
sanitize_rc=0
scripts/sanitize.sh > build/sanitize.log 2>&1 || sanitize_rc=$?
if [ "$sanitize_rc" -eq 0 ]; then
  grep -E "^(  Passed|  Failed|Done [0-9]+ runs)" build/sanitize.log || true
else
  grep -E "^(FAIL|UNRESOLVED):|ERROR|runtime error|SUMMARY|^  Failed" build/sanitize.log | head -20 || true
fi
# lit's summary lines read "  Passed     : 65 (97.01%)"; the conformance
# runs (host and Vulkan, against their floors) and the sanitizer run count
# as one test each.
count() { { grep -E "^\s+($1)\s*:" build/lit.log || true; } | awk -F: '{ split($2, n, " "); s += n[1] } END { print s + 0 }'; }
passed=$(count "Passed|Expectedly Failed")
failed=$(count "Failed|Unexpectedly Passed|Unresolved|Timed Out")
for rc in "$conformance_rc" "$vulkan_rc" "$sanitize_rc"; do
  if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
