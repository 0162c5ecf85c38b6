/**
 * One real Temporal dev server for the whole integration run (in-memory, on free ports), and one
 * workflow bundle shared by every test worker. TEMPORAL_ADDRESS given: use that server instead.
 */
import { mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFileSync } from 'node:fs';
import { ensureSearchAttributes, freePort, startDevServer } from '../dev/dev-server';
import { projectRoot } from '../dev/paths';
import { workflowBundleOptions } from '../workers/bundle';
import useRunTmpdir from './run-tmpdir';

export default async function globalSetup(): Promise<void> {
  // One folder per run: concurrent jest runs must not share a bundle, a log or a server.
  const dir = path.join(projectRoot(), '.temporal', `test-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  process.env.STARRY_TEST_DIR = dir;
  process.env.STARRY_TEST_STARTED_AT = new Date().toISOString();
  // The run's temporary folder first (jest runs a project's globalSetup before the top-level one).
  await useRunTmpdir();
  // The tests' workers: workspaces in the run's temp dir and the project's workspaces folder (the
  // examples'), never the project itself nor the call journal (a worker refuses roots that hold its own
  // files); scripts and models read from the project; local HTTP servers on any port, and (in CI
  // containers) root, said out loud. Tests of the policy itself pass their own.
  const journalDir = path.join(dir, 'journal');
  mkdirSync(journalDir, { recursive: true });
  process.env.STARRY_WORKER_POLICY ??= JSON.stringify({
    roots: [realpathSync(process.env.STARRY_TEST_TMPDIR as string), path.join(projectRoot(), 'workspaces')],
    llmDirs: [projectRoot()],
    journalDir,
    httpAllow: ['127.0.0.1:*', 'localhost:*'],
    llmAllow: ['127.0.0.1:*', 'localhost:*'],
  });
  process.env.STARRY_TOOLS_ALLOW_ROOT ??= '1';
  // The SDK's notice that its 2027 releases need Node 22 says nothing about this run.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  if (!process.env.TEMPORAL_ADDRESS) {
    const port = await freePort();
    const server = await startDevServer({
      port,
      uiPort: await freePort(),
      dbFile: null,
      logFile: path.join(dir, 'server.log'),
    });
    process.env.TEMPORAL_ADDRESS = server.address;
    process.env.STARRY_UI_URL = server.uiUrl;
    process.env.STARRY_TEST_SERVER_PID = String(server.pid);
  } else {
    const conn = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
    await ensureSearchAttributes(conn);
    await conn.close();
  }
  const { code } = await bundleWorkflowCode({ ...workflowBundleOptions(), logger: quietLogger });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  writeFileSync(bundlePath, code);
  process.env.STARRY_WORKFLOW_BUNDLE = bundlePath;
}

const noop = () => undefined;
const quietLogger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: console.error };
