#!/usr/bin/env python3
"""Models whose outputs' sizes depend on the data, checked against onnxruntime.

  data_dependent.py make DIR    # DIR/NAME.onnx and DIR/NAME/setK/<input>.npy
  data_dependent.py check DIR   # compiles each model with kiln-compile (on
                                # PATH), runs every input set through the
                                # executable and onnxruntime-node, compares
  data_dependent.py embedded DIR  # what examples/embed-c/detections.c must
                                # print, from onnxruntime on its inputs

Each model is compiled once, with no --input-shape or --input-value, and run
on several input sets whose outputs have different lengths (empty ones
included). `check` prints one line per run: OK or MISMATCH, with the output
shapes, and exits 1 on a mismatch.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)


def vi(name, dtype, shape):
    return h.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = h.make_graph(nodes, "g", inputs, [vi(n, t, None) for n, t in outputs], list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def random_boxes(batches, n):
    """[x_center, y_center, width, height] boxes in clusters, so that many
    overlap."""
    centers = rng.uniform(0, 10, (batches, n // 4 + 1, 2))
    pick = rng.integers(0, centers.shape[1], (batches, n))
    xy = np.take_along_axis(centers, pick[..., None], 1) + rng.normal(0, 0.3, (batches, n, 2))
    wh = rng.uniform(0.5, 2.0, (batches, n, 2))
    return np.concatenate([xy, wh], -1).astype(np.float32)


def cases():
    """name -> (model, [input sets, each {input name: array}])"""
    out = {}
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    sparse = np.where(rng.random((3, 4, 5)) < 0.2, x, 0).astype(np.float32)
    sparse[1, 2, 3] = np.nan  # nonzero
    out["nonzero"] = (
        model([h.make_node("NonZero", ["x"], ["y"])], [vi("x", T.FLOAT, [3, 4, 5])],
              [("y", T.INT64)]),
        [{"x": sparse}, {"x": np.zeros((3, 4, 5), np.float32)}, {"x": x}])
    # x[x > t]: the pattern exporters write for boolean indexing.
    out["masked_select"] = (
        model([h.make_node("Greater", ["x", "t"], ["mask"]),
               h.make_node("NonZero", ["mask"], ["nz"]),
               h.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
               h.make_node("GatherND", ["x", "idx"], ["y"])],
              [vi("x", T.FLOAT, [6, 7]), vi("t", T.FLOAT, [])], [("y", T.FLOAT)]),
        [{"x": rng.standard_normal((6, 7)).astype(np.float32), "t": np.array(t, np.float32)}
         for t in (0.5, 1.5, 9.0)])
    out["compress"] = (
        model([h.make_node("Compress", ["x", "c"], ["y"], axis=1)],
              [vi("x", T.FLOAT, [2, 6, 3]), vi("c", T.BOOL, [5])], [("y", T.FLOAT)]),
        [{"x": rng.standard_normal((2, 6, 3)).astype(np.float32),
          "c": np.array(c, bool)} for c in ([1, 0, 1, 1, 0], [0] * 5, [1] * 5)])
    out["unique"] = (
        model([h.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], sorted=0)],
              [vi("x", T.INT64, [12])],
              [("y", T.INT64), ("first", T.INT64), ("inverse", T.INT64), ("counts", T.INT64)],
              opset=11),
        [{"x": rng.integers(0, k, 12).astype(np.int64)} for k in (1, 4, 100)])
    out["unique_axis"] = (
        model([h.make_node("Unique", ["x"], ["y", "first", "inverse", "counts"], axis=1)],
              [vi("x", T.FLOAT, [2, 6, 2])],
              [("y", T.FLOAT), ("first", T.INT64), ("inverse", T.INT64), ("counts", T.INT64)],
              opset=11),
        [{"x": rng.integers(0, k, (2, 6, 2)).astype(np.float32)} for k in (1, 2, 5)])
    # Range with a run-time limit, then elementwise ops (a window function).
    out["range"] = (
        model([h.make_node("Range", ["start", "limit", "delta"], ["r"]),
               h.make_node("Cos", ["r"], ["y"])],
              [vi("start", T.FLOAT, []), vi("limit", T.FLOAT, []), vi("delta", T.FLOAT, [])],
              [("y", T.FLOAT)], opset=11),
        [{"start": np.array(a, np.float32), "limit": np.array(b, np.float32),
          "delta": np.array(c, np.float32)} for a, b, c in ((0, 5.5, 1.5), (3, 1, 1), (10, -3, -0.5))])
    out["top_k"] = (
        model([h.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1)],
              [vi("x", T.FLOAT, [3, 9]), vi("k", T.INT64, [1])],
              [("values", T.FLOAT), ("indices", T.INT64)]),
        [{"x": rng.standard_normal((3, 9)).astype(np.float32), "k": np.array([k], np.int64)}
         for k in (0, 4, 9)])
    # Detection post-processing: NMS per class, then the kept boxes and
    # scores gathered by the selected indices.
    out["detections"] = (
        model([h.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou", "min_score"],
                           ["selected"], center_point_box=1),
               h.make_node("Gather", ["selected", "two"], ["box_index"], axis=1),
               h.make_node("Gather", ["boxes_2d", "box_index"], ["kept_boxes"]),
               h.make_node("Reshape", ["boxes", "flat"], ["boxes_2d"]),
               h.make_node("Slice", ["selected", "one", "two_1d", "one"], ["class_col"]),
               h.make_node("Squeeze", ["class_col", "one"], ["classes"])],
              [vi("boxes", T.FLOAT, [1, 40, 4]), vi("scores", T.FLOAT, [1, 3, 40]),
               vi("min_score", T.FLOAT, [1])],
              [("selected", T.INT64), ("kept_boxes", T.FLOAT), ("classes", T.INT64)],
              [h.make_tensor("max", T.INT64, [1], [5]), h.make_tensor("iou", T.FLOAT, [1], [0.4]),
               h.make_tensor("two", T.INT64, [], [2]), h.make_tensor("two_1d", T.INT64, [1], [2]),
               h.make_tensor("one", T.INT64, [1], [1]),
               h.make_tensor("flat", T.INT64, [2], [40, 4])]),
        [{"boxes": random_boxes(1, 40), "scores": rng.random((1, 3, 40)).astype(np.float32),
          "min_score": np.array([s], np.float32)} for s in (0.2, 0.9, 1.0)])
    out["nms_batches"] = (
        model([h.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou"], ["selected"])],
              [vi("boxes", T.FLOAT, [2, 30, 4]), vi("scores", T.FLOAT, [2, 2, 30]),
               vi("max", T.INT64, [1]), vi("iou", T.FLOAT, [1])],
              [("selected", T.INT64)], opset=11),
        [{"boxes": random_boxes(2, 30)[..., [1, 0, 3, 2]],  # as corners' order does not matter
          "scores": rng.random((2, 2, 30)).astype(np.float32),
          "max": np.array([m], np.int64), "iou": np.array([t], np.float32)}
         for m, t in ((3, 0.5), (30, 0.1), (0, 0.5))])
    return out


def make(root, models=None):
    os.makedirs(root, exist_ok=True)
    for name, (m, sets) in (models or cases()).items():
        onnx.save(m, os.path.join(root, name + ".onnx"))
        for k, feeds in enumerate(sets):
            d = os.path.join(root, name, f"set{k}")
            os.makedirs(d, exist_ok=True)
            for input_name, array in feeds.items():
                np.save(os.path.join(d, input_name + ".npy"), array)


def check(root):
    names = sorted(f[:-5] for f in os.listdir(root) if f.endswith(".onnx"))
    runs, jobs = [], []
    for name in names:
        m = onnx.load(os.path.join(root, name + ".onnx"))
        inputs = [i.name for i in m.graph.input]
        exe = os.path.join(root, name, "exe")
        subprocess.run(["kiln-compile", os.path.join(root, name + ".onnx"), "-o", exe], check=True)
        for s in sorted(os.listdir(os.path.join(root, name))):
            d = os.path.join(root, name, s)
            if not s.startswith("set"):
                continue
            npys = [os.path.join(d, i + ".npy") for i in inputs]
            args = [exe] + [a for i, p in zip(inputs, npys) for a in ("--input", f"{i}={p}")]
            subprocess.run(args + ["--output-dir", os.path.join(d, "kiln")], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            jobs.append([os.path.join(root, name + ".onnx"), os.path.join(d, "ort")] + npys)
            runs.append((name, s, d, [o.name for o in m.graph.output]))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(jobs, f)
    env = dict(os.environ, NODE_PATH=os.environ.get("NODE_PATH", ""))
    ran = subprocess.run(["node", os.path.join(HERE, "ort_run.js"), "--batch", f.name], env=env,
                         capture_output=True, text=True)
    os.unlink(f.name)
    if ran.returncode != 0 or json.loads(ran.stdout):
        sys.exit(f"onnxruntime-node failed: {ran.stderr.strip() or ran.stdout.strip()}")
    ok = True
    for name, s, d, outputs in runs:
        shapes, same = [], True
        for o in outputs:
            got = np.load(os.path.join(d, "kiln", o + ".npy"))
            want = np.load(os.path.join(d, "ort", o + ".npy"))
            shapes.append("x".join(map(str, got.shape)))
            same &= got.shape == want.shape and got.dtype == want.dtype and \
                np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
        ok &= same
        print(f"{'OK' if same else 'MISMATCH'} {name}/{s}: {' '.join(shapes)}")
    return 0 if ok else 1


def embedded(root):
    """examples/embed-c/detections.c's inputs (exact in float32), its two
    runs by onnxruntime, printed as the example prints them."""
    i = np.arange(40)
    boxes = np.stack([(i % 8) * 1.5 + 0.25 * (i // 8), (i // 8) * 1.5, np.full(40, 2.0),
                      np.full(40, 2.0)], -1).astype(np.float32)[None]
    c = np.arange(3)[:, None]
    scores = (((i[None] * 7 + c * 13) % 40) / 40.0).astype(np.float32)[None]
    d = os.path.join(root, "embedded")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "boxes.npy"), boxes)
    np.save(os.path.join(d, "scores.npy"), scores)
    env = dict(os.environ, NODE_PATH=os.environ.get("NODE_PATH", ""))
    for min_score in (0.5, 0.9):
        np.save(os.path.join(d, "min_score.npy"), np.array([min_score], np.float32))
        subprocess.run(["node", os.path.join(HERE, "ort_run.js"),
                        os.path.join(root, "detections.onnx"), os.path.join(d, "ort")] +
                       [os.path.join(d, n + ".npy") for n in ("boxes", "scores", "min_score")],
                       env=env, check=True)
        rows = np.load(os.path.join(d, "ort", "selected.npy"))
        print(f"min_score {min_score:.2f}: {len(rows)} kept:" +
              "".join(f" {r[1]}/{r[2]}" for r in rows))


if __name__ == "__main__":
    commands = {"make": make, "check": check, "embedded": embedded}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    sys.exit(commands[sys.argv[1]](sys.argv[2]))
