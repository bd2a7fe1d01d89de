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
summary=$(grep -E "^\s+(Passed|Failed|Unsupported)" build/lit.log || true)
passed=$(echo "$summary" | awk '/Passed/ {print $2}'); failed=$(echo "$summary" | awk '/Failed/ {print $2}')
echo "${passed:-0} passed, ${failed:-0} failed"
exit $conformance_rc
