#!/usr/bin/env python3
"""Runs the ONNX conformance tests that `test/conformance/run.py --target T
--prepare DIR` compiled, on the machine with T's device (numpy only: no
onnx there), and judges their outputs as run.py does
(test/conformance/outputs.py). DIR may be a folder or DIR.tar.xz
(scripts/device/prepare.sh conformance packs it so). Prints each failure,
then `conformance --target=T: N passed, M failed[, K not run]`; with
--json, writes the counts and the failures. Exits 1 if a test failed or
did not run (--deadline), or if there was none.

  python3 scripts/device/conformance.py build/device-conformance/tests.tar.xz \\
      --target cuda [--json FILE] [--jobs N] [--filter REGEX] [--deadline SECONDS]
"""
import argparse
import concurrent.futures as futures
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test",
                                "conformance"))
from outputs import EXECUTABLE_TIMEOUT_S, mismatch  # noqa: E402


def tests_in(root):
    """The folders under `root` that hold a prepared test (test.json)."""
    for parent, _, names in os.walk(root):
        if "test.json" in names:
            yield parent


SKIPPED = "not run: the deadline passed"


def run_one(test_dir, deadline):
    """None if the test passes, SKIPPED past the deadline, else why not."""
    if deadline and time.monotonic() > deadline:
        return SKIPPED
    try:
        return judge(test_dir)
    except Exception as e:  # a broken test folder fails that test, not the run
        return f"{type(e).__name__}: {e}"


def judge(test_dir):
    """None if the test's executable matches its expected outputs, else why
    not."""
    with open(os.path.join(test_dir, "test.json")) as f:
        test = json.load(f)
    args = []
    for i, name in enumerate(test["inputs"]):
        args += ["--input", f"{name}={os.path.join(test_dir, f'input_{i}.npy')}"]
    with tempfile.TemporaryDirectory() as out:
        try:
            ran = subprocess.run([os.path.join(test_dir, "model")] + args + ["--output-dir", out],
                                 capture_output=True, text=True, timeout=EXECUTABLE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return "executable timed out"
        if ran.returncode != 0:
            lines = ran.stderr.strip().splitlines()
            return "executable failed: " + (lines[-1] if lines else f"exit {ran.returncode}")
        expected = [(name, np.load(os.path.join(test_dir, f"expected_{i}.npy")))
                    for i, name in enumerate(test["outputs"])]
        return mismatch(out, expected, test["rtol"], test["atol"], test.get("bf16_outputs", ()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", help="the prepared tests: a folder, or a .tar.xz of one")
    ap.add_argument("--target", default="cuda", help="the target they were compiled for")
    ap.add_argument("--json", help="write the counts and failures here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--filter", default="", help="only the tests whose path this regex finds")
    ap.add_argument("--deadline", type=float, help="start no test after this many seconds")
    args = ap.parse_args()
    root = args.tests
    if root.endswith(".tar.xz"):
        root = tempfile.mkdtemp()
        with tarfile.open(args.tests) as tar:
            tar.extractall(root)
    tests = sorted(t for t in tests_in(root) if re.search(args.filter, os.path.relpath(t, root)))
    failures, skipped, done, start = {}, 0, 0, time.monotonic()
    deadline = start + args.deadline if args.deadline else None
    pool = futures.ThreadPoolExecutor(args.jobs)
    pending = {pool.submit(run_one, t, deadline): t for t in tests}
    # Failures and progress as they come: a slow device still reports.
    for future in futures.as_completed(pending):
        why, done = future.result(), done + 1
        name = os.path.relpath(pending[future], root)
        if why == SKIPPED:
            skipped += 1
        elif why:
            failures[name] = why
            print(f"FAIL {name}: {why}", flush=True)
        if done % 100 == 0:
            print(f"conformance: {done}/{len(tests)} done, {len(failures)} failed, "
                  f"{skipped} not run, {time.monotonic() - start:.0f} s", flush=True)
    pool.shutdown()
    passed = len(tests) - len(failures) - skipped
    print(f"conformance --target={args.target}: {passed} passed, {len(failures)} failed"
          + (f", {skipped} not run (deadline)" if skipped else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.target, "passed": passed, "failed": len(failures),
                       "not_run": skipped, "failures": failures}, f, indent=1)
    return 1 if failures or skipped or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
