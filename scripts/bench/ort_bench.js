// Times onnxruntime-node on one model: a warm-up, then RUNS timed runs.
// usage: node ort_bench.js model.onnx RUNS THREADS input_0.npy [input_1.npy ...]
// prints: p50=<ms> min=<ms> max=<ms>
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require(path.join(__dirname, '../../test/inputs/npy.js'));

(async () => {
  const [model, runs, threads, ...inputs] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all'});
  const feeds = {};
  session.inputNames.forEach((name, i) => { feeds[name] = readNpy(inputs[i]); });
  const n = Number(runs);
  for (let i = 0; i < Math.max(1, Math.floor(n / 10)); ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < n; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(`p50=${times[Math.floor((n - 1) / 2)]} min=${times[0]} max=${times[n - 1]}`);
})().catch((e) => { console.error(e.message); process.exit(1); });
