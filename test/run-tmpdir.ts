/**
 * One temporary folder for the whole test run, unit and integration alike (jest's top-level
 * globalSetup, and the integration project's before it starts anything): every temporary file of the
 * run (workspaces, scripts, stores, synthesized stacks, the workers' and CLIs' own) goes under it, and
 * `test/run-tmpdir-teardown.ts` removes it. Runs used to leave ~300 folders (34 MB) each in the
 * system's temp dir. os.tmpdir() reads TMPDIR, and the test workers inherit it.
 */
import { mkdtempSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Create the run's folder once and point TMPDIR at it; the system's temp dir stays in STARRY_SYSTEM_TMPDIR. */
export default async function useRunTmpdir(): Promise<void> {
  if (process.env.STARRY_TEST_TMPDIR) return;
  const systemTmp = realpathSync(os.tmpdir());
  const tmp = mkdtempSync(path.join(systemTmp, 'starry-test-'));
  process.env.STARRY_SYSTEM_TMPDIR = systemTmp;
  process.env.STARRY_TEST_TMPDIR = tmp;
  process.env.TMPDIR = tmp;
}
