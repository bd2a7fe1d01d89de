// .npy reading and writing as onnxruntime-node tensors, shared by
// ort_run.js (the tests' reference) and scripts/bench/ort_bench.js.
const fs = require('fs');
const ort = require('onnxruntime-node');

// .npy descr <-> onnxruntime tensor type and typed array.
const TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '<u2': ['uint16', Uint16Array],
  '<f2': ['float16', Uint16Array], '<u4': ['uint32', Uint32Array], '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  const descr = header.match(/'descr': '([^']*)'/)[1];
  if (!TYPES[descr]) throw new Error(`${file}: unsupported .npy dtype ${descr}`);
  const [type, Array] = TYPES[descr];
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',')
      .map((s) => s.trim()).filter((s) => s).map(Number);
  const bytes = buf.buffer.slice(buf.byteOffset + 10 + headerLen, buf.byteOffset + buf.length);
  const data = type === 'bool' ? Array.from(new Uint8Array(bytes), (v) => v !== 0)
                               : new Array(bytes);
  return new ort.Tensor(type, data, shape);
}

function writeNpy(file, tensor) {
  const dims = tensor.dims.length === 1 ? `${tensor.dims[0]},` : tensor.dims.join(', ');
  const descr = Object.keys(TYPES).find((d) => TYPES[d][0] === tensor.type);
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const pre = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, header.length & 0xff,
                           header.length >> 8]);
  const data = tensor.type === 'bool' ? Uint8Array.from(tensor.data, (v) => (v ? 1 : 0))
                                      : tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
                                        Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

module.exports = {readNpy, writeNpy};
