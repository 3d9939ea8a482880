// Drives a cflowc server with the real OpenAI client (npm `openai`) and
// prints what it saw as one JSON object; serve/openai_test.go judges it.
// usage: node openai_client.cjs NODE_MODULES BASE_URL MODEL STOP
const [nm, baseURL, model, stop] = process.argv.slice(2);
const { OpenAI } = require(require('path').join(nm, 'openai'));

async function main() {
  const client = new OpenAI({ baseURL, apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const messages = [{ role: 'user', content: 'Once upon a time' }];
  const greedy = { model, messages, temperature: 0, max_tokens: 40 };
  const out = {};
  out.models = (await client.models.list()).data.map((m) => m.id);

  const r = await client.chat.completions.create(greedy);
  out.chat = { content: r.choices[0].message.content, finish: r.choices[0].finish_reason, usage: r.usage };

  const stream = await client.chat.completions.create({ ...greedy, stream: true, stream_options: { include_usage: true } });
  out.stream = { text: '', chunks: 0, finish: null, usage: null };
  for await (const c of stream) {
    if (c.choices.length) {
      const d = c.choices[0].delta.content;
      if (d) { out.stream.text += d; out.stream.chunks++; }
      if (c.choices[0].finish_reason) out.stream.finish = c.choices[0].finish_reason;
    }
    if (c.usage) out.stream.usage = c.usage;
  }

  const s = await client.chat.completions.create({ ...greedy, stop: [stop] });
  out.stop = { content: s.choices[0].message.content, finish: s.choices[0].finish_reason };

  const seeded = async () => (await client.chat.completions.create({ model, messages, temperature: 1, seed: 1234, max_tokens: 40 })).choices[0].message.content;
  out.seeded = [await seeded(), await seeded()];

  const c = await client.completions.create({ model, prompt: 'Once upon a time', temperature: 0, max_tokens: 40 });
  out.completion = c.choices[0].text;

  const failure = async (req) => {
    try { await client.chat.completions.create(req); return null; } catch (e) {
      return { status: e.status, param: e.param ?? null, code: e.code ?? null, type: e.type ?? null, name: e.constructor.name };
    }
  };
  out.badTemperature = await failure({ ...greedy, temperature: 5 });
  out.badModel = await failure({ ...greedy, model: 'no-such-model' });
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
