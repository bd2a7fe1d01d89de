#!/usr/bin/env bash
# Sets up and builds kiln (scripts/setup.sh), then runs the whole test suite:
# lit (dialect/pass FileCheck tests, driver tests, the runtime's gtest,
# end-to-end tests against onnxruntime-node) and the ONNX conformance runner,
# which fails when fewer tests pass than test/conformance/floor.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
/usr/lib/llvm-22/bin/lit -sv build/test | tee build/lit.log | grep -vE "^(PASS|UNSUPPORTED):"
conformance_rc=0
/usr/bin/python3 test/conformance/run.py --check-floor --report build/CONFORMANCE.md || conformance_rc=$?
# lit's summary lines read "  Passed     : 65 (97.01%)"; the conformance
# run (against its floor) counts as one more test.
count() { { grep -E "^\s+($1)\s*:" build/lit.log || true; } | awk -F: '{ split($2, n, " "); s += n[1] } END { print s + 0 }'; }
passed=$(count "Passed|Expectedly Failed")
failed=$(count "Failed|Unexpectedly Passed|Unresolved|Timed Out")
if [ "$conformance_rc" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
