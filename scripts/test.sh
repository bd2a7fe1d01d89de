#!/usr/bin/env bash
# Sets up and builds kiln (scripts/setup.sh), then runs the whole lit test
# suite: dialect/pass FileCheck tests, driver tests and end-to-end tests
# against onnxruntime-node.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
/usr/lib/llvm-22/bin/lit -sv build/test | tee build/lit.log | grep -vE "^(PASS|UNSUPPORTED):"
summary=$(grep -E "^\s+(Passed|Failed|Unsupported)" build/lit.log || true)
passed=$(echo "$summary" | awk '/Passed/ {print $2}'); failed=$(echo "$summary" | awk '/Failed/ {print $2}')
echo "${passed:-0} passed, ${failed:-0} failed"
