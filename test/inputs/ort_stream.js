// Runs a stateful ONNX model step by step with onnxruntime-node (the
// reference for kiln executables' --stream): steps DIR/0, DIR/1, ... hold
// <input>.npy files; each OUT=IN binding feeds output OUT of a step to input
// IN of the next. Writes OUT_DIR/<step>/<output>.npy, or with --time (and
// OUT_DIR '-') prints "step <k>: <ms> ms" per step instead.
// usage: node ort_stream.js [--time] model.onnx STEPS_DIR OUT_DIR [OUT=IN ...]
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readNpy, writeNpy} = require('./npy.js');

(async () => {
  let args = process.argv.slice(2);
  const time = args[0] === '--time';
  if (time)
    args = args.slice(1);
  const [model, stepsDir, outDir, ...bindings] = args;
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1});
  const bound = bindings.map((b) => b.split('='));
  let state = {};
  for (let step = 0; fs.existsSync(path.join(stepsDir, String(step))); ++step) {
    const feeds = {};
    for (const name of session.inputNames)
      feeds[name] = step > 0 && name in state
          ? state[name]
          : readNpy(path.join(stepsDir, String(step), name + '.npy'));
    const start = process.hrtime.bigint();
    const results = await session.run(feeds);
    if (time)
      console.log(`step ${step}: ${Number(process.hrtime.bigint() - start) / 1e6} ms`);
    state = {};
    for (const [output, input] of bound)
      state[input] = results[output];
    if (time)
      continue;
    const dir = path.join(outDir, String(step));
    fs.mkdirSync(dir, {recursive: true});
    for (const name of session.outputNames)
      writeNpy(path.join(dir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), results[name]);
  }
})().catch((e) => { console.error(e.message); process.exit(1); });
