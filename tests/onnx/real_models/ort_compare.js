// Runs a model in ONNX Runtime (onnxruntime-node, single-threaded) on the inputs
// run_model.cpp wrote, and compares its outputs with dlavm's: |dlavm - ort| <=
// atol + rtol * |ort| everywhere. Prints ONNX Runtime's mean time over the repeats.
// With --ties FILE (in OUTDIR, a byte per element of output 0): the outputs may differ only
// where FILE holds 1 (an element dlavm computed within 0.001 of a rounding tie).
//   node ort_compare.js ORT_DIR OUTDIR MODEL.onnx [--input NAME=D0xD1...] [--const NAME=INT]
//                       [--atol A] [--rtol R] [--repeat N] [--optimization disabled|all]
//                       [--ties FILE]
// ORT_DIR holds node_modules/onnxruntime-node. Exit 0: all outputs agree; 1: one differs.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [ortDir, outDir, model, ...rest] = process.argv.slice(2);
  const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
  let atol = 1e-4, rtol = 1e-3, repeat = 1, optimization = 'all', ties = null;
  const feeds = {};
  for (let i = 0; i < rest.length; i += 2) {
    const [flag, arg] = [rest[i], rest[i + 1]];
    const [name, value] = arg.split('=');
    if (flag === '--input') {
      const dims = value.split('x').map(Number);
      const b = fs.readFileSync(path.join(outDir, `in_${name}.bin`));
      const data = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
      feeds[name] = new ort.Tensor('float32', data, dims);
    } else if (flag === '--const') {
      feeds[name] = new ort.Tensor('int64', BigInt64Array.from([BigInt(value)]), []);
    } else if (flag === '--atol') {
      atol = Number(arg);
    } else if (flag === '--rtol') {
      rtol = Number(arg);
    } else if (flag === '--optimization') {
      optimization = arg;
    } else if (flag === '--ties') {
      ties = fs.readFileSync(path.join(outDir, arg));
    } else if (flag === '--repeat') {
      repeat = Number(arg);
    } else {
      throw new Error(`unknown option ${flag}`);
    }
  }
  const session = await ort.InferenceSession.create(
      model, {intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
              graphOptimizationLevel: optimization});
  let result = await session.run(feeds);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < repeat; ++i) result = await session.run(feeds);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6 / repeat;
  let ok = true;
  const notes = [];
  session.outputNames.forEach((name, k) => {
    const want = result[name];
    const file = path.join(outDir, `out_${k}.bin`);
    const b = fs.readFileSync(file);
    const got = want.type === 'float32'
        ? new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length))
        : new BigInt64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
    if (got.length !== want.data.length) {
      notes.push(`output ${k} '${name}': ${got.length} elements, ONNX Runtime's ${want.data.length}`);
      ok = false;
      return;
    }
    let worst = 0, bad = -1, differ = 0, nearTies = 0;
    const tied = k === 0 && ties !== null;
    for (let i = 0; i < got.length; ++i) {
      const g = Number(got[i]), w = Number(want.data[i]);
      const d = Math.abs(g - w);
      if (tied && ties[i] === 1) ++nearTies;
      if (d !== 0) ++differ;
      if (!(d <= atol + rtol * Math.abs(w)) || (tied && d !== 0 && ties[i] !== 1)) {
        if (bad < 0) bad = i;
      }
      if (d > worst || Number.isNaN(d)) worst = d;
    }
    notes.push(`output ${k} '${name}' [${want.dims}]: max |diff| ${worst.toExponential(2)}` +
               (tied ? `, ${differ} of ${got.length} differ (${nearTies} near ties)` : ''));
    if (bad >= 0) {
      notes.push(`  element ${bad}: dlavm ${got[bad]}, ONNX Runtime ${want.data[bad]}`);
      ok = false;
    }
  });
  console.log(`onnxruntime ${ort.env.versions.common}: ${ms.toFixed(1)} ms per run; ${notes.join('; ')}`);
  process.exit(ok ? 0 : 1);
}
main().catch((e) => { console.error(`FAIL: ${e.message}`); process.exit(1); });
