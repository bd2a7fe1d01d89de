// Runs an ONNX model with onnxruntime-node (the reference) on .npy inputs
// and writes OUT_DIR/<sanitized output name>.npy, like kiln executables do.
// usage: node ort_run.js [--unoptimized] model.onnx OUT_DIR input_0.npy [input_1.npy ...]
//        node ort_run.js --batch JOBS.json
// --unoptimized turns onnxruntime's graph optimizations off: a QDQ model
// then runs as written (Quantize, Dequantize, float ops), not through the
// int8 kernels it would fuse it into, which round requantization their own
// way and, on CPUs without VNNI, saturate pairs of u8 x s8 products.
// A batch is a JSON list of [model, OUT_DIR, inputs...] runs, all in one
// process; it prints {case: message} for the runs onnxruntime refused, where
// a case is named by its model's folder.
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readNpy, writeNpy} = require('./npy.js');

async function run(model, outDir, inputs, options = {}) {
  const session = await ort.InferenceSession.create(model, options);
  const feeds = {};
  session.inputNames.forEach((name, i) => { feeds[name] = readNpy(inputs[i]); });
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, {recursive: true});
  for (const name of session.outputNames)
    writeNpy(path.join(outDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), results[name]);
}

async function runBatch(jobsFile) {
  const refused = {};
  for (const [model, outDir, ...inputs] of JSON.parse(fs.readFileSync(jobsFile, 'utf8'))) {
    try {
      await run(model, outDir, inputs);
    } catch (e) {
      refused[path.basename(path.dirname(model))] = e.message.split('\n')[0];
    }
  }
  console.log(JSON.stringify(refused));
}

(async () => {
  const args = process.argv.slice(2);
  if (args[0] === '--batch')
    await runBatch(args[1]);
  else if (args[0] === '--unoptimized')
    await run(args[1], args[2], args.slice(3), {graphOptimizationLevel: 'disabled'});
  else
    await run(args[0], args[1], args.slice(2));
})().catch((e) => { console.error(e.message); process.exit(1); });
