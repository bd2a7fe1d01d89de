#!/usr/bin/env bash
# Builds kiln with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-asan/ (every kiln target and the runtime, and the executables
# kiln-compile links), runs the whole lit suite on that build (passes,
# importer, driver, runtime unit tests, end-to-end), then fuzzes the
# importer with libFuzzer (kiln-fuzz-import), seeded with the test models.
# Any sanitizer report, crash, leak, timeout or out-of-memory fails it.
#
#   scripts/sanitize.sh            # what CI runs: the tests, then 30,000
#                                  # fuzz inputs from a fixed seed (repeatable)
#   scripts/sanitize.sh --fuzz-only -runs=1000000   # fuzzing alone, with
#                                  # libFuzzer's flags (a random seed unless -seed=)
# Crashing inputs land in build-asan/fuzz-findings/; reproduce one with
#   build-asan/bin/kiln-fuzz-import FILE   or   build/bin/kiln-compile FILE
set -euo pipefail
cd "$(dirname "$0")/.."
KILN_BUILD_DIR=build-asan KILN_CMAKE_ARGS="-DKILN_SANITIZE=address,undefined -DKILN_FUZZ=ON" \
  scripts/setup.sh
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

if [ "${1:-}" = "--fuzz-only" ]; then
  shift
  flags=("$@")
else
  /usr/lib/llvm-22/bin/lit -sv build-asan/test
  flags=(-seed=1 -runs=30000)
fi

# Seed corpus: the models of the ONNX node tests, of the opset 18+ suite and
# the malformed ones of the tests.
corpus=build-asan/fuzz-corpus
if [ ! -d "$corpus" ]; then
  mkdir -p "$corpus.new" build-asan/fuzz-models
  for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
    cp "$m" "$corpus.new/$(basename "$(dirname "$m")").onnx"
  done
  /usr/bin/python3 test/conformance/modern.py build-asan/fuzz-models/modern >/dev/null
  for m in build-asan/fuzz-models/modern/*/model.onnx; do
    cp "$m" "$corpus.new/$(basename "$(dirname "$m")").onnx"
  done
  for name in $(/usr/bin/python3 -c "import sys; sys.path.insert(0, 'test/inputs'); \
                import make_models; print(' '.join(make_models.HOSTILE))"); do
    /usr/bin/python3 test/inputs/make_models.py "$name" "build-asan/fuzz-models/$name" >/dev/null
    cp "build-asan/fuzz-models/$name/model.onnx" "$corpus.new/hostile_$name.onnx"
  done
  cp test/inputs/fuzz/*.onnx "$corpus.new/"
  mv "$corpus.new" "$corpus"
fi
mkdir -p build-asan/fuzz-findings
# -rss_limit_mb: a model that makes the importer allocate gigabytes is a bug.
build-asan/bin/kiln-fuzz-import "$corpus" -artifact_prefix=build-asan/fuzz-findings/ \
  -rss_limit_mb=4096 -timeout=30 -max_len=1048576 -print_final_stats=1 "${flags[@]}"
echo "sanitize: clean"
