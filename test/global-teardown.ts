/** Stop the dev server that globalSetup started (and nothing else), and remove the run's folder. */
import { rmSync } from 'node:fs';
import { stopPid } from '../workers/dev-server';

export default async function globalTeardown(): Promise<void> {
  const pid = Number(process.env.STARRY_TEST_SERVER_PID ?? 0);
  if (pid) await stopPid(pid);
  if (process.env.STARRY_TEST_DIR) rmSync(process.env.STARRY_TEST_DIR, { recursive: true, force: true });
}
