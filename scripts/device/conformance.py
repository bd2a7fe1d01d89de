#!/usr/bin/env python3
"""Runs the ONNX conformance tests that `test/conformance/run.py --target T
--prepare DIR` compiled, on the machine with T's device (numpy only: no
onnx there), and judges their outputs as run.py does
(test/conformance/outputs.py). DIR may be a folder or DIR.tar.xz
(scripts/device/prepare.sh conformance packs it so). Prints each failure,
then `conformance --target=T: N passed, M failed`; with --json, writes
the counts and the failures; exits 1 if a test failed.

  python3 scripts/device/conformance.py build/device-conformance/tests.tar.xz \\
      --target cuda [--json FILE] [--jobs N]
"""
import argparse
import concurrent.futures as futures
import json
import os
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test",
                                "conformance"))
from outputs import mismatch  # noqa: E402


def tests_in(root):
    """The folders under `root` that hold a prepared test (test.json)."""
    for parent, _, names in os.walk(root):
        if "test.json" in names:
            yield parent


def run_one(test_dir):
    """None if the test passes, else why not."""
    with open(os.path.join(test_dir, "test.json")) as f:
        test = json.load(f)
    args = []
    for i, name in enumerate(test["inputs"]):
        args += ["--input", f"{name}={os.path.join(test_dir, f'input_{i}.npy')}"]
    with tempfile.TemporaryDirectory() as out:
        try:
            ran = subprocess.run([os.path.join(test_dir, "model")] + args + ["--output-dir", out],
                                 capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return "executable timed out"
        if ran.returncode != 0:
            lines = ran.stderr.strip().splitlines()
            return "executable failed: " + (lines[-1] if lines else f"exit {ran.returncode}")
        expected = [(name, np.load(os.path.join(test_dir, f"expected_{i}.npy")))
                    for i, name in enumerate(test["outputs"])]
        return mismatch(out, expected, test["rtol"], test["atol"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", help="the prepared tests: a folder, or a .tar.xz of one")
    ap.add_argument("--target", default="cuda", help="the target they were compiled for")
    ap.add_argument("--json", help="write the counts and failures here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    root = args.tests
    if root.endswith(".tar.xz"):
        root = tempfile.mkdtemp()
        with tarfile.open(args.tests) as tar:
            tar.extractall(root)
    tests = sorted(tests_in(root))
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(tests, pool.map(run_one, tests)))
    failures = {os.path.relpath(t, root): why for t, why in results.items() if why}
    for test, why in sorted(failures.items()):
        print(f"FAIL {test}: {why}")
    passed = len(tests) - len(failures)
    print(f"conformance --target={args.target}: {passed} passed, {len(failures)} failed")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.target, "passed": passed, "failed": len(failures),
                       "failures": failures}, f, indent=1)
    return 1 if failures or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
