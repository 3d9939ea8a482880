// Drives a cflowc server with the real Ollama client (npm `ollama`) and
// prints what it saw as one JSON object; serve/ollama_client_test.go
// judges it.
// usage: node ollama_client.cjs NODE_MODULES HOST MODEL API_KEY
const [nm, host, model, key] = process.argv.slice(2);
const { Ollama } = require(require('path').join(nm, 'ollama'));

async function main() {
  const client = new Ollama({ host, headers: { Authorization: `Bearer ${key}` } });
  const options = { temperature: 0, repeat_penalty: 1, num_predict: 40 };
  const messages = [{ role: 'user', content: 'Once upon a time' }];
  const out = {};
  out.version = (await client.version()).version;
  out.list = (await client.list()).models.map((m) => ({ name: m.name, size: m.size, digest: m.digest, quant: m.details.quantization_level }));
  const show = await client.show({ model });
  out.show = { arch: show.model_info['general.architecture'], capabilities: show.capabilities, format: show.details.format };
  out.ps = (await client.ps()).models.map((m) => ({ name: m.name, context_length: m.context_length }));

  const c = await client.chat({ model, messages, options });
  out.chat = { content: c.message.content, role: c.message.role, done: c.done, reason: c.done_reason,
    prompt: c.prompt_eval_count, eval: c.eval_count, total: c.total_duration, evalNs: c.eval_duration };
  out.chatStream = { text: '', parts: 0, last: null };
  for await (const p of await client.chat({ model, messages, options, stream: true })) {
    out.chatStream.text += p.message.content;
    out.chatStream.parts++;
    if (p.done) out.chatStream.last = { reason: p.done_reason, eval: p.eval_count, prompt: p.prompt_eval_count, total: p.total_duration };
  }
  const g = await client.generate({ model, prompt: 'Once upon a time', options });
  out.generate = { response: g.response, reason: g.done_reason, eval: g.eval_count };
  out.generateStream = { text: '', parts: 0, reason: null };
  for await (const p of await client.generate({ model, prompt: 'Once upon a time', options, stream: true })) {
    out.generateStream.text += p.response;
    out.generateStream.parts++;
    if (p.done) out.generateStream.reason = p.done_reason;
  }
  const failure = async (f) => {
    try { await f(); return null; } catch (e) { return { name: e.name, status: e.status_code ?? null, message: e.message }; }
  };
  out.badOption = await failure(() => client.chat({ model, messages, options: { temperature: 5 } }));
  out.badModel = await failure(() => client.chat({ model: 'no-such-model', messages }));
  out.noKey = await failure(() => new Ollama({ host }).list());
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
