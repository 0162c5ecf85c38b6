/**
 * Integration harness: a real worker (shared workflow bundle) on a task queue of its own, against the
 * dev server that globalSetup started, and the real AgentClient.
 */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { AgentClient } from '../../client/agent-client';
import { parseTaskConfig, type AgentConfigInput, type TaskConfig } from '../../core/config';
import { startEmbeddedWorker } from '../../dev/embedded';
import type { CreateWorkerOptions } from '../../workers/worker';
import type { ActivityDeps } from '../../activities';
import type { AlertEvent } from '../../activities/alert';
import { eventually } from '../../dev/poll';
import { freePort, startDevServer, type DevServer } from '../../dev/dev-server';

export interface Harness {
  agents: AgentClient;
  connection: Connection;
  taskQueue: string;
  /** Absent with `withWorker: false`. */
  worker?: Worker;
  /** The daemon alerts' log lines, kept here (not on stderr) so a test that provokes one can read it. */
  alerts: string[];
  stop(): Promise<void>;
}

let seq = 0;
export const uniqueId = (prefix: string) => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++seq}`;

export function address(): string {
  const a = process.env.TEMPORAL_ADDRESS;
  if (!a)
    throw new Error(
      'TEMPORAL_ADDRESS is not set: run the integration tests through jest (globalSetup starts the server)',
    );
  return a;
}

export interface HarnessOptions {
  name: string;
  withWorker?: boolean;
  activities?: Partial<ActivityDeps>;
  interceptors?: CreateWorkerOptions['interceptors'];
  continueAsNewAfterEvents?: number;
  /** Another server than the run's shared one. */
  address?: string;
  /** An existing task queue (a new worker for workflows started earlier); default a fresh one. */
  taskQueue?: string;
  /** The worker's own tools (`createWorker({ tools })`). */
  tools?: CreateWorkerOptions['tools'];
  /** Plugin modules (`createWorker({ plugins })`): the worker then bundles its workflows at start, without the run's bundle. */
  plugins?: CreateWorkerOptions['plugins'];
  /** The worker's deployment and version (workers/versioning.ts); default: the run's, taking it over. */
  versioning?: CreateWorkerOptions['versioning'];
  /** The worker's traces and where their export failures are logged (workers/otel.ts); default: none. */
  tracing?: CreateWorkerOptions['tracing'];
  tracingLog?: CreateWorkerOptions['tracingLog'];
}

export async function startHarness(opts: HarnessOptions): Promise<Harness> {
  const taskQueue = opts.taskQueue ?? uniqueId(`tq-${opts.name}`);
  const env = { address: opts.address ?? address(), namespace: 'default' };
  const alerts: string[] = [];
  // The worker the CLI embeds, on the run's bundle; test/quiet-runtime.ts has installed the logger.
  const embedded =
    opts.withWorker === false
      ? undefined
      : await startEmbeddedWorker(env, taskQueue, {
          logs: false,
          ...(opts.plugins ? { plugins: opts.plugins } : { workflowBundlePath: process.env.STARRY_WORKFLOW_BUNDLE }),
          activities: { ...opts.activities, alerts: { log: (line) => alerts.push(line), ...opts.activities?.alerts } },
          interceptors: opts.interceptors,
          ...(opts.tools ? { tools: opts.tools } : {}),
          // The run's own server: its build takes the deployment over, as `starry dev` does on its own.
          versioning: { makeCurrent: 'take-over', ...opts.versioning },
          ...(opts.tracing ? { tracing: opts.tracing } : {}),
          ...(opts.tracingLog ? { tracingLog: opts.tracingLog } : {}),
        });
  const connection = await Connection.connect({ address: env.address });
  const agents = new AgentClient({ connection, taskQueue, continueAsNewAfterEvents: opts.continueAsNewAfterEvents });
  return {
    agents,
    connection,
    taskQueue,
    worker: embedded?.worker,
    alerts,
    async stop() {
      await embedded?.stop();
      await connection.close();
    },
  };
}

/** The daemon alert the harness's worker raised for an agent (the agent raises it after the task ends). */
export function alertFor(h: Harness, agentId: string): Promise<AlertEvent> {
  return eventually(`the daemon alert of ${agentId}`, async () =>
    h.alerts.map((line) => JSON.parse(line) as AlertEvent).find((a) => a.agentId === agentId),
  );
}

/** A scripted controller file in a temp dir (in `base`, the run's temp folder by default). */
export function writeScript(turns: unknown[], base = os.tmpdir()): string {
  const dir = mkdtempSync(path.join(base, 'starry-script-'));
  const file = path.join(dir, 'turns.json');
  writeFileSync(file, JSON.stringify({ turns }, null, 2));
  return file;
}

/** A workspace root with the given files, in `base` (the run's temp folder by default). */
export function makeWorkspace(files: Record<string, string> = {}, base = os.tmpdir()): string {
  const root = mkdtempSync(path.join(base, 'starry-ws-'));
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), content);
  }
  return root;
}

/**
 * A folder for what a worker keeps (a content store, a dev server's state folder), outside every root of
 * the run's policy: a worker refuses roots that hold its own files (workers/own-paths.ts), and the run's
 * temporary folder is a root.
 */
export function privateDir(prefix: string): string {
  const base = process.env.STARRY_TEST_DIR ?? path.join(os.tmpdir(), '..');
  return mkdtempSync(path.join(base, `${prefix}-`));
}

/**
 * A tenant's part of the run's workspace root (`<root>/<tenant>`, core/tenant.ts): the only place its
 * tasks' workspaces and scripts may lie. Made here, as a task's first call would make it.
 */
export function tenantDir(tenant: string): string {
  const dir = path.join(os.tmpdir(), tenant);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * A validated config for a scripted run, as an edge sends it (`parseTaskConfig`: its `safety` only what
 * `overrides` gives, so a later task inherits its agent's limits); fast retries so transient tests stay short. The verification
 * step (on by default for users) is off unless a test turns it on: these tests count exact ticks and
 * calls of other rungs; the verification step has tests of its own (eperm-scenario, cli).
 */
export function scriptedConfig(script: string, workspace: string, overrides: AgentConfigInput = {}): TaskConfig {
  return parseTaskConfig(
    {
      workspace: [workspace],
      verify: false,
      retry: { initialIntervalMs: 100, backoffCoefficient: 2, maximumIntervalMs: 1000, maximumAttempts: 5 },
      ...overrides,
    },
    `scripted:${script}`,
  );
}

/**
 * An in-memory dev server of a test's own, on free ports, that suggests continue-as-new after `events`
 * history events: a short task then moves through several histories.
 */
export async function startEarlyContinueServer(name: string, events: number): Promise<DevServer> {
  const port = await freePort();
  return startDevServer({
    port,
    uiPort: await freePort(),
    dbFile: null,
    logFile: path.join(os.tmpdir(), `starry-${name}-${port}.log`),
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': events },
  });
}
