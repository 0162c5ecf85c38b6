/**
 * Replay every agent and task history of the run (a nondeterminism fails the run), then stop the dev
 * server that globalSetup started (and nothing else) and remove the run's folder.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { stopPid } from '../dev/dev-server';
import { projectRoot } from '../dev/paths';
import { replayAllHistories } from './helpers/replay-all';

export default async function globalTeardown(): Promise<void> {
  let failure: Error | undefined;
  const { TEMPORAL_ADDRESS, STARRY_TEST_STARTED_AT } = process.env;
  if (TEMPORAL_ADDRESS && STARRY_TEST_STARTED_AT && process.env.STARRY_REPLAY_ALL !== '0') {
    const saveDir = path.join(projectRoot(), '.temporal', 'replay-failures');
    const started = Date.now();
    const report = await replayAllHistories(TEMPORAL_ADDRESS, new Date(STARRY_TEST_STARTED_AT), saveDir);
    if (report.failures.length) {
      const list = report.failures.map((f) => `  ${f.workflowId}: ${f.error}\n    history: ${f.file}`).join('\n');
      failure = new Error(
        `${report.failures.length} of ${report.replayed} workflow histories of this run do not replay (nondeterminism):\n${list}`,
      );
    } else {
      console.log(
        `\nreplay check: all ${report.replayed} agent and task histories of this run replay against the current code (${((Date.now() - started) / 1000).toFixed(1)} s)`,
      );
    }
  }
  const pid = Number(process.env.STARRY_TEST_SERVER_PID ?? 0);
  if (pid) await stopPid(pid);
  if (process.env.STARRY_TEST_DIR) rmSync(process.env.STARRY_TEST_DIR, { recursive: true, force: true });
  if (failure) throw failure;
}
