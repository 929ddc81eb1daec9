// Compiled by test/types.test.mjs (tsc --noEmit --strict): the declarations
// in index.d.ts must type a real handler.
import {
  createGuard, form, url, isRetry, GuardError, codes, redisLedger, MemoryLedger, rawJSON, keysFromEnv, generateKey,
  loadModule, loadPolicy, wasiShim, WASIExit, platform, wasmURL,
  type Guard, type Request, type InputRequiredResult, type Outcome, type Ledger, type Policy,
} from 'mrtr-wasm';

const schema = { type: 'object', properties: { email: { type: 'string', format: 'email' } }, required: ['email'] };

async function handler(guard: Guard, req: Request): Promise<InputRequiredResult | { content: { type: 'text'; text: string }[] }> {
  if (!isRetry(req)) return guard.ask(req, [form('contact', 'Your work email?', schema)]);
  const out: Outcome = await guard.resume(req);
  if (out.status === 'input_required') return out.inputRequired!;
  if (out.status !== 'complete') return { content: [{ type: 'text', text: 'Nothing was booked.' }] };
  const { email } = out.content<{ email: string }>('contact');
  const { result, replay } = await guard.once(out, async ({ operationId }) => ({ id: operationId, email }));
  const id: string = result.id;
  return { content: [{ type: 'text', text: `${replay ? 'Already booked' : 'Booked'} ${id}` }] };
}

async function main() {
  const ledger: Ledger = new MemoryLedger({ maxEntries: 10 });
  const policy: Policy = { ask: () => ({ allow: true, maxRounds: 2 }), resume: async () => ({ allow: true }) };
  const guard = await createGuard({ keys: keysFromEnv() ?? generateKey(), audience: 'crm.example.com', ledger, policy, ttl: 120, maxStateBytes: 4096, memoryLimitMiB: 16 });
  const req: Request = { principal: 'ann', method: 'tools/call', target: 't', arguments: rawJSON('{"a":1}'), capabilities: { elicitation: {} } };
  try {
    await handler(guard, req);
    await guard.lint(url('k', 'Connect', 'https://example.com/c'));
  } catch (e) {
    if (e instanceof GuardError && e.code === codes.STATE_INVALID) console.log(e.jsonRpcCode, e.reason);
  }
  const r = redisLedger({ sendCommand: async (args: string[]) => args.length });
  await r.ping();
  await guard.close();
}
void main;

// A Worker: guard.wasm and policy.wasm as compiled modules, keys from its env.
async function worker(env: { MRTR_KEYS: string }, guardWasm: object, policyWasm: object, opa: object) {
  const policy = await loadPolicy({ wasm: policyWasm, data: { tools: {} } }, { opa });
  const guard = await createGuard({ module: guardWasm, keys: keysFromEnv(env)!, policy });
  const bytes: Uint8Array = new Uint8Array(8);
  await loadModule(bytes);
  await loadModule(fetch('https://example.com/guard.wasm'));
  if (wasmURL) await loadModule(wasmURL);
  const layer = wasiShim();
  const code: number | undefined = layer.exitCode;
  const e = new WASIExit();
  console.log(code, e.code, platform.name, guard.keyIds);
}
void worker;
