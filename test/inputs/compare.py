#!/usr/bin/env python3
"""Compares every .npy in EXPECTED_DIR with the same file in ACTUAL_DIR.

usage: compare.py EXPECTED_DIR ACTUAL_DIR [--rtol R] [--atol A] [--min-sqnr DB]
Prints one line per output with the worst error; exits 1 on a mismatch. With
--min-sqnr (for quantized outputs), an output matches when its
signal-to-quantization-noise ratio against the expected one is at least DB."""
import argparse
import os
import sys

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("expected")
ap.add_argument("actual")
ap.add_argument("--rtol", type=float, default=1e-4)
ap.add_argument("--atol", type=float, default=1e-5)
ap.add_argument("--min-sqnr", type=float, help="dB; replaces the rtol/atol check")
args = ap.parse_args()
ok = True
names = sorted(f for f in os.listdir(args.expected) if f.endswith(".npy"))
if not names:
    sys.exit("compare: no reference outputs in " + args.expected)
for name in names:
    want = np.load(os.path.join(args.expected, name))
    got = np.load(os.path.join(args.actual, name))
    if want.shape != got.shape:
        print(f"MISMATCH {name}: shape {got.shape}, expected {want.shape}")
        ok = False
        continue
    err = np.abs(got.astype(np.float64) - want)
    if args.min_sqnr is not None:
        noise = float(np.sum(err ** 2))
        sqnr = float("inf") if noise == 0 else 10 * np.log10(np.sum(want.astype(np.float64) ** 2) / noise)
        close = sqnr >= args.min_sqnr
        print(f"{'OK' if close else 'MISMATCH'} {name}: sqnr={sqnr:.1f} dB "
              f"max_abs_err={err.max(initial=0):.3g} (min sqnr {args.min_sqnr:g} dB)")
        ok &= close
        continue
    close = np.allclose(got, want, rtol=args.rtol, atol=args.atol)
    print(f"{'OK' if close else 'MISMATCH'} {name}: max_abs_err={err.max(initial=0):.3g} "
          f"(rtol={args.rtol}, atol={args.atol})")
    ok &= close
sys.exit(0 if ok else 1)
