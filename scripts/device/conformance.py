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

The tests run in DIR/run-models (test/conformance/run_models.c: every
test's model linked into one program), --jobs processes of it, each
running one test after another: the driver starts, and the GPU context is
made, once a process, not once a test. A process that crashes or hangs
(EXECUTABLE_TIMEOUT_S) fails its test and a new one goes on with the rest.
"""
import argparse
import json
import os
import queue
import re
import select
import shlex
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
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


class Runner:
    """One run-models process, started at its first test and again after
    one crashed or hung."""

    def __init__(self, command):
        self.command = command
        self.process = None
        self.pending = b""

    def run(self, name, out_dir, inputs):
        """None once the test's outputs are in `out_dir`, else why not."""
        if not self.process:
            # stderr to a file: a pipe nobody reads would stall it once full.
            self.errors = tempfile.TemporaryFile()
            self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=self.errors)
            self.pending = b""
        fields = [name, out_dir] + [f"{n}={p}" for n, p in inputs]
        try:
            self.process.stdin.write(("\t".join(fields) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            return self.lost("died before the test")
        end = time.monotonic() + EXECUTABLE_TIMEOUT_S
        while True:
            line = self.read_line(end)
            if line is None:
                return self.lost(f"timed out after {EXECUTABLE_TIMEOUT_S} s")
            if line == "":
                return self.lost("crashed")
            if line == f"ok {name}":
                return None
            if line.startswith(f"error {name}: "):
                return "the run failed: " + line[len(f"error {name}: "):]

    def read_line(self, end):
        """The next line of the process's output; "" at its end, None past
        `end`."""
        out = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            left = end - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                return None
            chunk = os.read(out, 65536)
            if not chunk:
                return ""
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode(errors="replace")

    def lost(self, what):
        """Ends the process (its test is the one that began last); why."""
        self.process.kill()
        self.process.communicate()
        status = self.process.returncode
        self.process = None
        self.errors.seek(0)
        lines = self.errors.read().decode(errors="replace").strip().splitlines()
        self.errors.close()
        if status < 0 and what == "crashed":
            what = f"crashed ({signal.Signals(-status).name})"
        return f"the runner {what}" + (f": {lines[-1]}" if lines else "")

    def close(self):
        if self.process:
            self.process.stdin.close()
            self.process.wait()
            self.process = None
            self.errors.close()


def judge(runner, root, test_dir):
    """None if the test's outputs match its expected ones, else why not."""
    with open(os.path.join(test_dir, "test.json")) as f:
        test = json.load(f)
    inputs = [(name, os.path.join(test_dir, f"input_{i}.npy"))
              for i, name in enumerate(test["inputs"])]
    with tempfile.TemporaryDirectory() as out:
        why = runner.run(os.path.relpath(test_dir, root), out, inputs)
        if why:
            return why
        expected = [(name, np.load(os.path.join(test_dir, f"expected_{i}.npy")))
                    for i, name in enumerate(test["outputs"])]
        return mismatch(out, expected, test["rtol"], test["atol"], test.get("bf16_outputs", ()))


def work(command, root, tests, deadline, results):
    """A worker: takes tests from the queue `tests` until none is left,
    runs them in one Runner of `command`, and puts (test, why) on
    `results`."""
    runner = Runner(command)
    while True:
        try:
            test_dir = tests.get_nowait()
        except queue.Empty:
            break
        if deadline and time.monotonic() > deadline:
            results.put((test_dir, SKIPPED))
            continue
        try:
            why = judge(runner, root, test_dir)
        except Exception as e:  # a broken test folder fails that test, not the run
            why = f"{type(e).__name__}: {e}"
        results.put((test_dir, why))
    runner.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", help="the prepared tests: a folder, or a .tar.xz of one")
    ap.add_argument("--target", default="cuda", help="the target they were compiled for")
    ap.add_argument("--json", help="write the counts and failures here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--filter", default="", help="only the tests whose path this regex finds")
    ap.add_argument("--deadline", type=float, help="start no test after this many seconds")
    ap.add_argument("--runner", help="the command that runs the tests (default: DIR/run-models)")
    args = ap.parse_args()
    root = args.tests
    if root.endswith(".tar.xz"):
        root = tempfile.mkdtemp()
        with tarfile.open(args.tests) as tar:
            tar.extractall(root)
    tests = sorted(t for t in tests_in(root) if re.search(args.filter, os.path.relpath(t, root)))
    command = shlex.split(args.runner) if args.runner else [os.path.join(root, "run-models")]
    if tests and not args.runner and not os.access(command[0], os.X_OK):
        print(f"conformance: no {command[0]}: prepare the tests with test/conformance/run.py "
              "--prepare", file=sys.stderr)
        return 1
    failures, skipped, start = {}, 0, time.monotonic()
    deadline = start + args.deadline if args.deadline else None
    todo, results = queue.Queue(), queue.Queue()
    for t in tests:
        todo.put(t)
    workers = [threading.Thread(target=work, args=(command, root, todo, deadline, results))
               for _ in range(max(1, min(args.jobs, len(tests))))]
    for w in workers:
        w.start()
    # Failures and progress as they come: a slow device still reports.
    for done in range(1, len(tests) + 1):
        test_dir, why = results.get()
        name = os.path.relpath(test_dir, root)
        if why == SKIPPED:
            skipped += 1
        elif why:
            failures[name] = why
            print(f"FAIL {name}: {why}", flush=True)
        if done % 100 == 0:
            print(f"conformance: {done}/{len(tests)} done, {len(failures)} failed, "
                  f"{skipped} not run, {time.monotonic() - start:.0f} s", flush=True)
    for w in workers:
        w.join()
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
