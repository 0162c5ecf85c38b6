/** Stop the dev server that globalSetup started (and nothing else). */
import { stopPid } from '../workers/dev-server';

export default async function globalTeardown(): Promise<void> {
  const pid = Number(process.env.STARRY_TEST_SERVER_PID ?? 0);
  if (pid) await stopPid(pid);
}
