// Runs an ONNX model with onnxruntime-node (the reference) on .npy inputs
// and writes OUT_DIR/<sanitized output name>.npy, like kiln executables do.
// usage: node ort_run.js model.onnx OUT_DIR input_0.npy [input_1.npy ...]
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  if (!header.includes("'<f4'")) throw new Error(`${file}: only float32 .npy inputs`);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',')
      .map((s) => s.trim()).filter((s) => s).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + 10 + headerLen,
                                                 buf.byteOffset + buf.length));
  return new ort.Tensor('float32', data, shape);
}

function writeNpy(file, tensor) {
  const dims = tensor.dims.length === 1 ? `${tensor.dims[0]},` : tensor.dims.join(', ');
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const pre = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, header.length & 0xff,
                           header.length >> 8]);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
                                        Buffer.from(tensor.data.buffer)]));
}

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
