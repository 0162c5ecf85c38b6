/**
 * Debian's chromium (which `npm run setup` installs) driven by playwright-core, headless and quiet: the
 * Web UI and trace viewer tests look through it, and bench/trace-screenshot.ts takes the docs' picture.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Where the browser is: STARRY_CHROMIUM, or Debian's. */
export const CHROMIUM = process.env.STARRY_CHROMIUM ?? '/usr/bin/chromium';

// Without the background-networking flags Chromium keeps dialling Google's hosts, which a closed network refuses.
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Launch it, or say how to get it.
 *
 * ```ts
 * const browser = await launchChromium();
 * const page = await browser.newPage();
 * ```
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: run \`npm run setup\` (it installs Debian's chromium) or set STARRY_CHROMIUM`,
    );
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
}
