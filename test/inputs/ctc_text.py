#!/usr/bin/env python3
"""Compares what two runs of a CTC text recognizer read: greedy decoding
(the most likely class per step, repeats merged, blanks (class 0) dropped)
of the one .npy output in each directory. Prints "same text: N characters"
or exits 1 with both readings as class indices.

usage: ctc_text.py EXPECTED_DIR ACTUAL_DIR"""
import os
import sys

import numpy as np


def read(directory):
    (name,) = [f for f in os.listdir(directory) if f.endswith(".npy")]
    steps = np.load(os.path.join(directory, name))[0].argmax(-1)
    text = [int(c) for i, c in enumerate(steps) if c != 0 and (i == 0 or c != steps[i - 1])]
    return text


want, got = read(sys.argv[1]), read(sys.argv[2])
if want != got:
    sys.exit(f"ctc_text: different text: expected {want}, got {got}")
print(f"same text: {len(want)} characters")
