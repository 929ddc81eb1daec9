// Compiled with usage.ts by test/types.test.mjs: each line below is a
// misuse that must NOT type-check. `@ts-expect-error` fails the build if
// the line compiles, so the declarations stay strict.
import { createGuard, form, generateKey, wasiShim, Outcome, MemoryLedger, type Guard, type Request } from 'mrtr-wasm';

export async function misuse(guard: Guard, req: Request) {
  // @ts-expect-error Outcomes come from resume(), never from new.
  new Outcome();
  // @ts-expect-error keys are required.
  await createGuard({ audience: 'a' });
  // @ts-expect-error the clock seam is not an option.
  await createGuard({ keys: generateKey(), clock: () => 0 });
  // @ts-expect-error the randomness seam is not an option.
  await createGuard({ keys: generateKey(), random: (b: Uint8Array) => b.fill(0) });
  // @ts-expect-error the test hooks are not an option.
  await createGuard({ keys: generateKey(), testHooks: true });
  // @ts-expect-error a key always comes from crypto.getRandomValues.
  generateKey((b: Uint8Array) => b.fill(1));
  // @ts-expect-error the WASI layer takes no randomness.
  wasiShim({ randomFill: (b: Uint8Array) => b.fill(1) });
  // @ts-expect-error a form needs a schema.
  form('contact', 'Who?');
  const out = await guard.resume(req);
  // @ts-expect-error answers are read-only.
  out.answers = {};
  // @ts-expect-error maxEntries is a number.
  new MemoryLedger({ maxEntries: 'ten' });
}
