// A stdio tap for the client matrix: node stdio-tap.mjs REPORT -- CMD ARGS
// runs CMD as the client's stdio server, relays both ways unchanged, and
// checks each line CMD writes to the client against the client's revision
// (wire-check.mjs; the era from the client's first line). What fails is
// appended to REPORT as JSON lines.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { check, eraOf } from './wire-check.mjs';

const [report, sep, cmd, ...args] = process.argv.slice(2);
if (sep !== '--' || !cmd) {
  console.error('usage: stdio-tap.mjs REPORT -- CMD ARGS');
  process.exit(2);
}
const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'] });
let era;
const methods = new Map(); // request id -> method, from the client
let checked = 0;
const fail = (why, line) => appendFileSync(report, JSON.stringify({ era, why, message: line.slice(0, 2000) }) + '\n');

createInterface({ input: process.stdin }).on('line', (line) => {
  try {
    const m = JSON.parse(line);
    era ??= eraOf(m);
    if (m.method && 'id' in m) methods.set(JSON.stringify(m.id), m.method);
  } catch { /* the server answers it */ }
  child.stdin.write(line + '\n');
}).on('close', () => child.stdin.end());

createInterface({ input: child.stdout }).on('line', (line) => {
  process.stdout.write(line + '\n');
  let m;
  try { m = JSON.parse(line); } catch { return fail('not JSON', line); }
  const why = check(era ?? '2026-07-28', m, methods.get(JSON.stringify(m.id)));
  checked++;
  if (why) fail(why, line);
});
child.on('exit', (code, signal) => {
  appendFileSync(report, JSON.stringify({ checked }) + '\n');
  process.exit(code ?? (signal ? 1 : 0));
});
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => child.kill(s));
