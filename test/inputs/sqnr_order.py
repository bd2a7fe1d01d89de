#!/usr/bin/env python3
"""Checks that an SQNR rises from file to file: each FILE holds one line
matching PATTERN (a regex whose first group is the SQNR in dB); prints
"increasing: A < B < ..." or exits 1 with the values.

usage: sqnr_order.py PATTERN FILE FILE [FILE...]"""
import re
import sys

pattern, files = re.compile(sys.argv[1]), sys.argv[2:]
values = []
for name in files:
    found = [m.group(1) for m in map(pattern.search, open(name).read().splitlines()) if m]
    if len(found) != 1:
        sys.exit(f"sqnr_order: {name}: {len(found)} lines match {sys.argv[1]!r}, expected 1")
    values.append(float(found[0]))
text = " < ".join(f"{v:.1f}" for v in values)
if any(a >= b for a, b in zip(values, values[1:])):
    sys.exit(f"sqnr_order: not increasing: {text}")
print(f"increasing: {text}")
