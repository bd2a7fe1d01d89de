#!/usr/bin/env python3
"""Checks a Chrome trace written by a kiln executable's --profile.

usage: check_trace.py TRACE.json
Every complete ("X") event must have a name, a start and a non-negative
duration; thread 0 holds "run" and "kernel" events, each kernel inside a run;
threads 1.. hold the pool workers' "share" events. Prints the runs, the
distinct kernel names (sorted) and whether any worker share was recorded;
exits 1 on a malformed trace."""
import json
import sys

trace = json.load(open(sys.argv[1]))
events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
for e in events:
    if not e.get("name") or e["dur"] < 0 or e["ts"] < 0:
        sys.exit(f"malformed event {e}")
    if (e["tid"] == 0) != (e["cat"] in ("run", "kernel")):
        sys.exit(f"event on the wrong thread: {e}")
runs = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["cat"] == "run"]
for e in events:
    if e["cat"] == "kernel" and not any(b <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-3
                                        for b, end in runs):
        sys.exit(f"kernel outside every run: {e}")
print("runs:", len(runs))
print("kernels:", ", ".join(sorted({e["name"] for e in events if e["cat"] == "kernel"})))
print("worker shares:", "yes" if any(e["cat"] == "share" for e in events) else "no")
