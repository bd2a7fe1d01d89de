// Runs a stateful ONNX model step by step with onnxruntime-node (the
// reference for kiln executables' --stream): steps DIR/0, DIR/1, ... hold
// <input>.npy files; each OUT=IN binding feeds output OUT of a step to input
// IN of the next. Writes OUT_DIR/<step>/<output>.npy.
// usage: node ort_stream.js model.onnx STEPS_DIR OUT_DIR [OUT=IN ...]
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readNpy, writeNpy} = require('./npy.js');

(async () => {
  const [model, stepsDir, outDir, ...bindings] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const bound = bindings.map((b) => b.split('='));
  let state = {};
  for (let step = 0; fs.existsSync(path.join(stepsDir, String(step))); ++step) {
    const feeds = {};
    for (const name of session.inputNames)
      feeds[name] = step > 0 && name in state
          ? state[name]
          : readNpy(path.join(stepsDir, String(step), name + '.npy'));
    const results = await session.run(feeds);
    state = {};
    for (const [output, input] of bound)
      state[input] = results[output];
    const dir = path.join(outDir, String(step));
    fs.mkdirSync(dir, {recursive: true});
    for (const name of session.outputNames)
      writeNpy(path.join(dir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), results[name]);
  }
})().catch((e) => { console.error(e.message); process.exit(1); });
