#!/usr/bin/env python3
"""ONNX conformance runner for kiln.

Runs every test of the ONNX backend test data (Debian package
libonnx-testdata: node, simple, pytorch-converted, pytorch-operator) and of
kiln's generated opset 18+ suite (modern.py, references from onnxruntime)
through kiln-compile and the compiled executable, compares the outputs with
the expected ones, writes docs/CONFORMANCE.md and prints a summary line.

  test/conformance/run.py                       # all suites, writes the doc
  test/conformance/run.py --filter 'test_relu'  # a subset, no doc
  test/conformance/run.py --check-floor          # fail if passes < floor
  test/conformance/run.py --target vulkan        # compiled for a GPU target:
                                                 # docs/CONFORMANCE-vulkan.md
  test/conformance/run.py --target cuda --prepare DIR   # compile only, into
                                                 # one program (DIR/run-models)
                                                 # to run on a GPU machine with
                                                 # scripts/device/conformance.py

A test is applicable when its inputs and outputs are tensors, it does not use
the training domain, and its outputs are not random (see NOT_APPLICABLE_OPS).
"""
import argparse
import concurrent.futures as futures
import collections
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

import modern
from outputs import EXECUTABLE_TIMEOUT_S, mismatch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLANG = "/usr/lib/llvm-22/bin/clang"
DATA = "/usr/share/libonnx-testdata/data"
MODERN = "opset18+"
SUITES = ["node", "simple", "pytorch-converted", "pytorch-operator", MODERN]
FLOOR_FILE = os.path.join(ROOT, "test", "conformance", "floor.txt")
# Targets whose reports the host's report quotes.
GPU_TARGETS = ["vulkan"]

# Ops whose outputs are random, or that only exist in training.
NOT_APPLICABLE_OPS = {"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform",
                      "RandomUniformLike", "Multinomial"}
TRAINING_DOMAINS = {"ai.onnx.preview.training"}

# Default tolerances, and the tests that need others (with the reason).
RTOL, ATOL = 1e-3, 1e-5
TOLERANCE_EXCEPTIONS = {
    # name: (rtol, atol, why)
}


def not_applicable(model):
    """The reason a test is outside the conformance target, or None."""
    for node in model.graph.node:
        if node.domain in TRAINING_DOMAINS:
            return "training domain"
        if node.op_type in NOT_APPLICABLE_OPS:
            return f"random output ({node.op_type})"
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
            return "training-mode Dropout"
    for vi in list(model.graph.input) + list(model.graph.output):
        if not vi.type.HasField("tensor_type"):
            return "non-tensor input or output"
    return None


def contradicts_declared_input(model, input_name, tensor):
    """Why the test data does not fit the model's declared input, or None.

    A few upstream tests (the bfloat16 CastLike ones) ship data of another
    element type or rank than the model declares; no compiler can run them as
    written, so they are outside the target rather than failures."""
    declared = next(vi for vi in model.graph.input if vi.name == input_name).type.tensor_type
    # numpy has no bfloat16: upstream stores bfloat16 test data as UINT16 bits.
    bf16_bits = (tensor.data_type, declared.elem_type) == (TensorProto.UINT16, TensorProto.BFLOAT16)
    if tensor.data_type != declared.elem_type and not bf16_bits:
        return (f"test data contradicts the model: input '{input_name}' is "
                f"{onnx.TensorProto.DataType.Name(tensor.data_type)}, declared "
                f"{onnx.TensorProto.DataType.Name(declared.elem_type)}")
    dims = [d.dim_value if d.HasField("dim_value") else None for d in declared.shape.dim]
    if declared.HasField("shape") and (len(dims) != len(tensor.dims) or any(
            d is not None and d != t for d, t in zip(dims, tensor.dims))):
        return (f"test data contradicts the model: input '{input_name}' has shape "
                f"{list(tensor.dims)}, declared {['?' if d is None else d for d in dims]}")
    return None


def suite_dir(suite, work):
    return os.path.join(work, MODERN + "-data") if suite == MODERN else os.path.join(DATA, suite)


def generate_modern_suite(work):
    """Writes the opset 18+ cases unless they are newer than their generator."""
    out = suite_dir(MODERN, work)
    stamp = os.path.join(out, ".generated")
    sources = [modern.__file__, modern.ORT_RUN]
    if os.path.exists(stamp) and all(os.path.getmtime(stamp) > os.path.getmtime(f) for f in sources):
        return
    shutil.rmtree(out, ignore_errors=True)
    modern.generate(out)
    open(stamp, "w").close()


def op_label(name, model):
    """The operator a test is about, for the per-op table."""
    ops = [n.op_type for n in model.graph.node if n.op_type != "Constant"]
    short = name[len("test_"):].lower().replace("_", "")
    for op in sorted(set(ops), key=len, reverse=True):
        if short.startswith(op.lower()):
            return op
    if len(set(ops)) == 1:
        return ops[0]
    return "(model)"


def first_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line:
            return re.sub(r"/[^ ]*/", "", line)[:160]
    return "no message"


def test_symbol(suite, name):
    """The C symbol prefix of a prepared test's model: unique, and an
    identifier whatever the test's name."""
    return "t_" + hashlib.sha1(f"{suite}/{name}".encode()).hexdigest()[:16]


def prepare_test(to, obj, out_dir, inputs, expected, bf16, rtol, atol, op, start):
    """Moves a compiled test to `to`, to run elsewhere: the model's object
    (linked into run-models by link_runner), its inputs, the expected
    outputs (.npy: the GPU machine has no onnx) and test.json, what
    scripts/device/conformance.py needs to run and judge it."""
    shutil.rmtree(to, ignore_errors=True)
    os.makedirs(to)
    shutil.move(obj, os.path.join(to, "model.o"))
    for i in range(len(inputs)):
        shutil.move(os.path.join(out_dir, f"input_{i}.npy"), os.path.join(to, f"input_{i}.npy"))
    for i, (_, want) in enumerate(expected):
        np.save(os.path.join(to, f"expected_{i}.npy"), want)
    with open(os.path.join(to, "test.json"), "w") as f:
        json.dump({"op": op, "inputs": inputs, "outputs": [n for n, _ in expected],
                   "bf16_outputs": bf16, "rtol": rtol, "atol": atol}, f)
    shutil.rmtree(out_dir, ignore_errors=True)
    return "prepared", "", op, time.time() - start


def run_test(kiln, suite, name, work, target=None, prepare=None):
    """Returns (status, reason, op, seconds); status in pass/fail/unsupported/n/a,
    or with `prepare` (a folder), `prepared` in place of running it."""
    start = time.time()
    test_dir = os.path.join(suite_dir(suite, work), name)
    try:
        model = onnx.load(os.path.join(test_dir, "model.onnx"))
    except Exception as e:  # noqa: BLE001 - any load failure is a test failure
        return "fail", f"cannot load model: {e}", "(model)", 0.0
    if suite == MODERN:
        op = f"{model.graph.node[0].op_type}-{model.opset_import[0].version}"
    else:
        op = op_label(name, model) if suite == "node" else "(model)"
    no_reference = os.path.join(test_dir, "no_reference.txt")
    reason = not_applicable(model) or (os.path.exists(no_reference) and
                                       "onnxruntime 1.30 refuses it: " + open(no_reference).read())
    if reason:
        return "n/a", reason, op, 0.0
    data_dir = os.path.join(test_dir, "test_data_set_0")
    out_dir = os.path.join(work, suite, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in initializers]
    args, run_args = [], []
    for i, input_name in enumerate(inputs):
        tensor = onnx.TensorProto()
        with open(os.path.join(data_dir, f"input_{i}.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        contradiction = contradicts_declared_input(model, input_name, tensor)
        if contradiction:
            return "n/a", contradiction, op, 0.0
        array = numpy_helper.to_array(tensor)
        path = os.path.join(out_dir, f"input_{i}.npy")
        np.save(path, array)
        if array.ndim > 0:
            args += ["--input-shape", f"{input_name}=" + "x".join(map(str, array.shape))]
        run_args += ["--input", f"{input_name}={path}"]
    exe = os.path.join(out_dir, "model")
    if prepare:  # an object, linked with the others into one program
        exe += ".o"
        args += ["--emit=object", "--name", test_symbol(suite, name)]
    try:
        target_args = [f"--target={target}"] if target else []
        compiled = subprocess.run([kiln, os.path.join(test_dir, "model.onnx"), "-o", exe] + args
                                  + target_args, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "fail", "kiln-compile timed out", op, time.time() - start
    if compiled.returncode != 0:
        message = first_line(compiled.stderr)
        crashed = compiled.returncode < 0 or "Stack dump" in compiled.stderr
        if crashed:
            return "fail", "kiln-compile crashed: " + message, op, time.time() - start
        status = ("unsupported" if re.search(r"unsupported|not supported|does not support", message)
                  else "fail")
        return status, message, op, time.time() - start
    rtol, atol, _ = TOLERANCE_EXCEPTIONS.get(name, (RTOL, ATOL, ""))
    expected = []
    for i, vi in enumerate(model.graph.output):
        tensor = onnx.TensorProto()
        with open(os.path.join(data_dir, f"output_{i}.pb"), "rb") as f:
            tensor.ParseFromString(f.read())
        expected.append((vi.name, numpy_helper.to_array(tensor)))
    bf16 = [vi.name for vi in model.graph.output
            if vi.type.tensor_type.elem_type == TensorProto.BFLOAT16]
    if prepare:
        return prepare_test(os.path.join(prepare, suite, name), exe, out_dir, inputs, expected,
                            bf16, rtol, atol, op, start)
    try:
        ran = subprocess.run([exe] + run_args + ["--output-dir", os.path.join(out_dir, "out")],
                             capture_output=True, text=True, timeout=EXECUTABLE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "fail", "executable timed out", op, time.time() - start
    if ran.returncode != 0:
        return "fail", "executable failed: " + first_line(ran.stderr), op, time.time() - start
    why = mismatch(os.path.join(out_dir, "out"), expected, rtol, atol, bf16)
    if why:
        return "fail", why, op, time.time() - start
    shutil.rmtree(out_dir, ignore_errors=True)
    return "pass", "", op, time.time() - start


def link_runner(kiln, prepared, tests):
    """Links the models of the prepared `tests` [(suite, name)] with the
    runtime and run_models.c into PREPARED/run-models, and deletes their
    objects; the linker's message if it fails."""
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(kiln))), "lib", "kiln")
    symbols = [test_symbol(suite, name) for suite, name in tests]
    table = os.path.join(prepared, "tests.c")
    with open(table, "w") as f:
        f.write("/* The tests of run-models: test/conformance/run.py --prepare. */\n"
                '#include "kiln/runtime.h"\n\n')
        f.writelines(f"extern const kiln_model_info {s}_info;\n" for s in symbols)
        f.write("const char *const kiln_test_names[] = {\n")
        f.writelines(f"  {json.dumps(f'{suite}/{name}')},\n" for suite, name in tests)
        f.write("};\nconst kiln_model_info *const kiln_test_models[] = {\n")
        f.writelines(f"  &{s}_info,\n" for s in symbols)
        f.write(f"}};\nconst unsigned kiln_num_tests = {len(tests)};\n")
    objects = [os.path.join(prepared, suite, name, "model.o") for suite, name in tests]
    response = os.path.join(prepared, "objects.rsp")
    with open(response, "w") as f:
        f.writelines(o + "\n" for o in objects)
    linked = subprocess.run(
        [CLANG, "-O2", "-std=c11", "-Wall", f"-I{lib}/include", f"-I{ROOT}/runtime/src",
         os.path.join(ROOT, "test", "conformance", "run_models.c"), table, "@" + response,
         os.path.join(lib, platform.machine(), "libkiln_runtime.a"), "-lm", "-lpthread",
         "-o", os.path.join(prepared, "run-models")], capture_output=True, text=True)
    for path in objects + [response, table]:
        os.remove(path)
    return None if linked.returncode == 0 else linked.stderr.strip() or "the link failed"


def target_report(target):
    return os.path.join(ROOT, "docs", f"CONFORMANCE-{target}.md")


def write_report(path, results, summary, target=None):
    by_op = collections.defaultdict(list)
    for (suite, name), (status, reason, op, _) in sorted(results.items()):
        if suite == "node":
            by_op[op].append((name, status, reason))
    title = f"# ONNX conformance, --target={target}" if target else "# ONNX conformance"
    command = f"test/conformance/run.py --target {target}" if target else "test/conformance/run.py"
    lines = [title, "",
             f"Generated by `{command}` from the ONNX backend test data",
             "(Debian package libonnx-testdata) and kiln's generated opset 18+ suite",
             "(`test/conformance/modern.py`). Do not edit by hand.", "",
             f"**{summary}**", ""]
    if not target:
        for other in GPU_TARGETS:
            found = os.path.exists(target_report(other)) and re.search(
                r"^\*\*(.*)\*\*$", open(target_report(other)).read(), re.M)
            if found:
                lines += [f"With `--target={other}` ([CONFORMANCE-{other}.md]"
                          f"(CONFORMANCE-{other}.md)): {found.group(1)}.", ""]
    lines += [f"Tolerances: rtol {RTOL}, atol {ATOL}"
              + ("; exceptions: " + ", ".join(f"{k} ({v[2]})" for k, v in
                                              TOLERANCE_EXCEPTIONS.items())
                 if TOLERANCE_EXCEPTIONS else "; no exceptions") + ".", "",
              "## Per suite", "", "| suite | applicable | pass | fail | unsupported | n/a |",
              "|---|---|---|---|---|---|"]
    for suite in SUITES:
        counts = collections.Counter(s for (su, _), (s, *_ ) in results.items() if su == suite)
        if not sum(counts.values()):
            continue
        applicable = sum(counts.values()) - counts["n/a"]
        lines.append(f"| {suite} | {applicable} | {counts['pass']} | {counts['fail']} | "
                     f"{counts['unsupported']} | {counts['n/a']} |")
    lines += ["", "## Node tests per operator", "",
              "| op | pass | tests | status and first reason |", "|---|---|---|---|"]
    for op, tests in sorted(by_op.items()):
        applicable = [t for t in tests if t[1] != "n/a"]
        passed = sum(1 for t in applicable if t[1] == "pass")
        if not applicable:
            state = "n/a: " + tests[0][2]
        elif passed == len(applicable):
            state = "pass"
        else:
            bad = next(t for t in applicable if t[1] != "pass")
            state = f"{bad[1]}: {bad[2]} ({bad[0]})".replace("|", "\\|")
        lines.append(f"| {op} | {passed} | {len(applicable)} | {state} |")
    lines += modern_report(results)
    lines += ["", "## Other suites", "", "| suite | test | status | reason |", "|---|---|---|---|"]
    for (suite, name), (status, reason, _, _) in sorted(results.items()):
        if suite not in ("node", MODERN):
            lines.append(f"| {suite} | {name} | {status} | {reason.replace('|', '/')} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def modern_report(results):
    """The opsets 18-27 table: one row per case of modern.py."""
    rows = sorted(((op, name, status, reason) for (suite, name), (status, reason, op, _)
                   in results.items() if suite == MODERN),
                  key=lambda r: (r[0].rsplit("-", 1)[0], int(r[0].rsplit("-", 1)[1]), r[1]))
    passed = sum(1 for r in rows if r[2] == "pass")
    lines = ["", "## Opsets 18-27", "",
             "Generated cases (test/conformance/modern.py): one model per new or changed op,",
             "written at the opset named, references from onnxruntime-node 1.30 (which runs",
             "opsets up to 26; kiln accepts 27). "
             f"**{passed} of {len(rows)} pass.**", "",
             "| op-opset | case | status | reason |", "|---|---|---|---|"]
    for op, name, status, reason in rows:
        lines.append(f"| {op} | {name} | {status} | {reason.replace('|', '/')} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "bin", "kiln-compile"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "conformance"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--filter", help="only tests whose name matches this regex (no report)")
    ap.add_argument("--target", help="compile for this kiln-compile --target (e.g. vulkan); "
                    "the report goes to docs/CONFORMANCE-<target>.md")
    ap.add_argument("--report", help="where to write the report (default: docs/CONFORMANCE.md, "
                    "or the target's)")
    ap.add_argument("--check-floor", action="store_true",
                    help=f"exit 1 if fewer tests pass than {os.path.relpath(FLOOR_FILE, ROOT)} "
                    "(with --target T: floor-T.txt beside it)")
    ap.add_argument("--prepare", metavar="DIR",
                    help="compile only: link every test's model into DIR/run-models, and put "
                    "each test's inputs and expected outputs in DIR/<suite>/<name>/, for "
                    "scripts/device/conformance.py to run on a machine with the target's device "
                    "(no report, no floor)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every result")
    ap.add_argument("--results", default=os.path.join(ROOT, "build", "conformance", "results.tsv"),
                    help="where to write every test's status and reason (TSV)")
    args = ap.parse_args()
    floor_file = FLOOR_FILE
    if args.target:
        args.work += "-" + args.target
        args.results = os.path.join(args.work, "results.tsv")
        floor_file = FLOOR_FILE.replace("floor.txt", f"floor-{args.target}.txt")
    if not args.report:
        args.report = (target_report(args.target) if args.target
                       else os.path.join(ROOT, "docs", "CONFORMANCE.md"))

    generate_modern_suite(args.work)
    tests = [(suite, name) for suite in SUITES
             for name in sorted(os.listdir(suite_dir(suite, args.work)))
             if os.path.exists(os.path.join(suite_dir(suite, args.work), name, "model.onnx"))
             and (not args.filter or re.search(args.filter, name))]
    results = {}
    start = time.time()
    with futures.ThreadPoolExecutor(args.jobs) as pool:
        jobs = {pool.submit(run_test, args.kiln, s, n, args.work, args.target, args.prepare):
                (s, n) for s, n in tests}
        for done, job in enumerate(futures.as_completed(jobs), 1):
            results[jobs[job]] = job.result()
            if args.verbose:
                status, reason, _, secs = results[jobs[job]]
                print(f"{status:11} {jobs[job][0]}/{jobs[job][1]} ({secs:.2f}s) {reason}")
            elif done % 100 == 0:
                print(f"conformance: {done}/{len(tests)} tests run", file=sys.stderr)
    counts = collections.Counter(r[0] for r in results.values())
    node = collections.Counter(r[0] for (s, _), r in results.items() if s == "node")
    node_applicable = sum(node.values()) - node["n/a"]
    applicable = len(results) - counts["n/a"]
    summary = (f"node tests: {node['pass']}/{node_applicable} applicable pass "
               f"({100.0 * node['pass'] / max(node_applicable, 1):.1f}%); all suites: "
               f"{counts['pass']} passed, {counts['fail']} failed, "
               f"{counts['unsupported']} unsupported, {counts['n/a']} not applicable")
    if args.prepare:
        prepared = sorted(t for t, r in results.items() if r[0] == "prepared")
        why = prepared and link_runner(args.kiln, args.prepare, prepared)
        if why:
            print(f"conformance: linking {args.prepare}/run-models failed: {why}")
            return 1
        summary = (f"{counts['prepared']} compiled into {args.prepare}, {counts['fail']} failed, "
                   f"{counts['unsupported']} unsupported, {counts['n/a']} not applicable")
    print(f"conformance: {summary} in {time.time() - start:.0f} s")
    os.makedirs(os.path.dirname(args.results), exist_ok=True)
    with open(args.results, "w") as f:
        for (suite, name), (status, reason, op, secs) in sorted(results.items()):
            f.write(f"{suite}\t{name}\t{op}\t{status}\t{secs:.2f}\t{reason}\n")
    if not args.filter and not args.prepare:
        write_report(args.report, results, summary, args.target)
    if args.check_floor and not args.prepare:
        floor = int(open(floor_file).read().split()[0])
        if counts["pass"] < floor:
            print(f"conformance: FAILED: {counts['pass']} tests pass, the floor is {floor}")
            return 1
        print(f"conformance: {counts['pass']} tests pass (floor {floor})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
