"""A run-models (test/conformance/run_models.c) that crashes at the tests
whose name holds CRASH_AT: it hands every other plan line to the real one
(argv[1]), a process per line, and passes its answer on."""
import os
import signal
import subprocess
import sys

real, crash_at = sys.argv[1], os.environ["CRASH_AT"]
for line in sys.stdin:
    name = line.split("\t", 1)[0]
    print(f"begin {name}", flush=True)
    if crash_at in name:
        print("about to crash", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    answer = subprocess.run([real], input=line, capture_output=True, text=True).stdout
    print(answer.splitlines()[-1], flush=True)
