// relay answers a node:http request with a fetch-style handler (the
// SDK's createMcpHandler): the test servers' one bridge between the two.
export async function relay(handler, req, res, body) {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
  const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body: req.method === 'POST' ? body : undefined });
  const response = await handler.fetch(request);
  const out = {};
  response.headers.forEach((v, k) => { out[k] = v; });
  res.writeHead(response.status, out);
  if (response.body) for await (const chunk of response.body) res.write(chunk);
  res.end();
}
