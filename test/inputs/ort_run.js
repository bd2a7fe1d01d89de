// Runs an ONNX model with onnxruntime-node (the reference) on .npy inputs
// and writes OUT_DIR/<sanitized output name>.npy, like kiln executables do.
// usage: node ort_run.js model.onnx OUT_DIR input_0.npy [input_1.npy ...]
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readNpy, writeNpy} = require('./npy.js');

(async () => {
  const [model, outDir, ...inputs] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const feeds = {};
  session.inputNames.forEach((name, i) => { feeds[name] = readNpy(inputs[i]); });
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, {recursive: true});
  for (const name of session.outputNames)
    writeNpy(path.join(outDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), results[name]);
})().catch((e) => { console.error(e.message); process.exit(1); });
