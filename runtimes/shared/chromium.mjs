// Headless Chromium from Debian's package (/usr/bin/chromium), driven by
// playwright-core: never a downloaded browser, a fresh profile per run.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.MRTR_CHROMIUM ?? '/usr/bin/chromium';
// --headless comes from headless: true; --user-data-dir from the profile
// directory (playwright refuses it among args).
export const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function launch() {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  const profile = mkdtempSync(join(tmpdir(), 'mrtr-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 60_000 });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    version: context.browser()?.version() ?? (await page.evaluate(() => navigator.userAgent)),
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
