// The resume benchmark in workerd: GET /bench?n=N&warm=W runs it inside one
// request and answers JSON. guard.wasm is a Wasm module (compiled at load).
import * as api from '../node_modules/mrtr-wasm/index.js';
import GUARD from '../node_modules/mrtr-wasm/guard.wasm';
import { benchResume } from '../shared/bench-core.mjs';

export default {
  async fetch(request, env) {
    const u = new URL(request.url);
    if (u.pathname !== '/bench') return new Response('not found', { status: 404 });
    try {
      const r = await benchResume(api, GUARD, { n: Number(u.searchParams.get('n')), warm: Number(u.searchParams.get('warm')) });
      return Response.json({ runtime: env.WORKERD_VERSION, ...r });
    } catch (e) {
      return Response.json({ error: String(e?.stack ?? e) }, { status: 500 });
    }
  },
};
