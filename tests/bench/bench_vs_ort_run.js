#!/usr/bin/env node
// bench_vs_ort_run.js — times one ONNX model with ONNX Runtime (onnxruntime-node, CPU) for
// bench_vs_ort.py: the same inputs (.npy files), the same thread count, outputs written
// back as .npy so the Python side compares them.
//
//   node bench_vs_ort_run.js ORT_DIR SPEC.json
//
// ORT_DIR is where tests/bench/setup_ort.sh installed onnxruntime-node (its node_modules
// is searched). SPEC: {"model": path, "inputs": {name: npy path}, "outputs": [names],
// "threads": N, "warmup": W, "repeat": R, "out_dir": dir}. Prints one JSON line:
// {"median_ms", "mean_ms", "min_ms", "max_ms", "repeat", "threads", "ort_version"}.
// Inputs: little-endian f32, i64, i32 or bool C-order .npy files; outputs are written as
// f32 (integer and bool outputs converted).
'use strict';
const fs = require('fs');
const path = require('path');

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const d = /'descr':\s*'[<|](f4|i8|i4|b1)'/.exec(header);
  if (!d || /'fortran_order':\s*True/.test(header))
    throw new Error(file + ': expected little-endian f32, i64, i32 or bool in C order, header ' +
                    header.trim());
  const m = /'shape':\s*\(([^)]*)\)/.exec(header);
  const dims = m[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const off = hstart + hlen;
  const kind = { f4: ['float32', Float32Array], i8: ['int64', BigInt64Array],
                 i4: ['int32', Int32Array], b1: ['bool', Uint8Array] }[d[1]];
  const data = new kind[1](n);
  Buffer.from(data.buffer).set(buf.subarray(off, off + data.byteLength));
  return { dims, data, type: kind[0] };
}

function writeNpy(file, dims, data) {  // every output as f32 (integers and bools converted)
  if (!(data instanceof Float32Array)) data = Float32Array.from(data, Number);
  const shape = dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
  let header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ', }';
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

async function main() {
  const [ortDir, specPath] = process.argv.slice(2);
  if (!ortDir || !specPath) {
    console.error('usage: node bench_vs_ort_run.js ORT_DIR SPEC.json');
    process.exit(2);
  }
  const ort = require(path.join(path.resolve(ortDir), 'node_modules', 'onnxruntime-node'));
  const spec = JSON.parse(fs.readFileSync(specPath, 'utf8'));
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: spec.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const [name, file] of Object.entries(spec.inputs)) {
    const a = readNpy(file);
    feeds[name] = new ort.Tensor(a.type, a.data, a.dims);
  }
  let out = await session.run(feeds);
  fs.mkdirSync(spec.out_dir, { recursive: true });
  spec.outputs.forEach((name, i) => {
    writeNpy(path.join(spec.out_dir, 'out' + i + '.npy'), out[name].dims, out[name].data);
  });
  for (let i = 1; i < spec.warmup; i++) out = await session.run(feeds);
  const ms = [];
  for (let i = 0; i < spec.repeat; i++) {
    const t0 = process.hrtime.bigint();
    out = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = [...ms].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  let version = 'unknown';
  try {
    version = require(path.join(path.resolve(ortDir), 'node_modules', 'onnxruntime-node',
                                'package.json')).version;
  } catch (e) { /* keep unknown */ }
  console.log(JSON.stringify({
    median_ms: median, mean_ms: ms.reduce((a, b) => a + b, 0) / ms.length,
    min_ms: sorted[0], max_ms: sorted[sorted.length - 1], repeat: ms.length,
    threads: spec.threads, ort_version: version,
  }));
}

main().catch((e) => {
  console.error('error: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
