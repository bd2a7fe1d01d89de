#!/usr/bin/env bash
# The benchmark: sets up and builds kiln (scripts/setup.sh), then times kiln
# against onnxruntime-node, interleaved, at 1 and 2 threads, and writes
# docs/BENCHMARKS.md. Options go to scripts/bench/run.py (--help lists them).
# Not part of the test suite: timings are noisy; correctness of the same
# models is tested by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
exec /usr/bin/python3 scripts/bench/run.py "$@"
