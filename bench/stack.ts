/**
 * What every benchmark stands on: its own in-memory `temporal server start-dev` on free ports, an
 * in-process worker with production settings (`dev/embedded.ts`, as the CLI and the tests start
 * theirs), and a line that says where the figures were measured.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Worker, type ActivityInterceptorsFactory } from '@temporalio/worker';
import { AgentClient } from '../client/agent-client';
import { parseAgentConfig, type AgentConfig } from '../core/config';
import { type DevServer, freePort, startDevServer } from '../dev/dev-server';
import { stateDir, temporalCliPath } from '../dev/paths';
import { startEmbeddedWorker } from '../dev/embedded';
import { connectWorker } from '../workers/connection';
import { workerConfigFromEnv } from '../workers/env';
import { workflowTaskSlots } from '../workers/worker';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Time for the server's counters to reach its metrics endpoint (measured: within a second). */
const COUNTERS_PUBLISHED_MS = 1_500;

export interface BenchStack {
  agents: AgentClient;
  /** A scratch folder for the benchmark's files. */
  dir: string;
  stop(): Promise<void>;
  /** The dev server's gRPC address and the worker's task queue, for hosts that connect on their own. */
  address: string;
  taskQueue: string;
  /** CPU time used so far, in ms: the dev server's process and this one (every worker thread in it). */
  cpu(): { serverMs: number; workerMs: number };
  /** The dev server's process (`--profile-server`). */
  serverPid: number;
  /**
   * The server's request counters by operation (`service_requests`, `persistence_requests`, …):
   * started with `metrics`. Waits for what just happened to be published first (1.5 s).
   */
  counters(): Promise<Map<string, number>>;
}

/**
 * Start a server and a worker for `name`, with a scratch folder (workspaces, the server's log, the
 * transcripts); `stop()` stops both and removes the folder, unless `STARRY_BENCH_KEEP=1` asks to keep it.
 */
export async function startBenchStack(
  name: string,
  opts: {
    metrics?: boolean;
    /** Persist the server's database in the scratch folder (`server.db`), so its size can be read; default in memory. */
    dbFile?: boolean;
    /** Start the in-process worker (default true); false when the benchmark runs its own worker process. */
    worker?: boolean;
    /** How long the stack's client waits for a worker to take a submit (`AgentClientOptions.acceptTimeoutMs`). */
    acceptTimeoutMs?: number;
    /** Activity interceptors for the in-process worker (e.g. `activityTimer().interceptor`). */
    activityInterceptors?: ActivityInterceptorsFactory[];
  } = {},
): Promise<BenchStack> {
  // The benchmarks' workspaces are temporary folders: the worker's policy must allow them.
  process.env.STARRY_WORKSPACE_ROOTS ??= os.tmpdir();
  const dir = mkdtempSync(path.join(os.tmpdir(), `starry-bench-${name}-`));
  // The transcripts go to a store of the benchmark's own (its extra worker processes inherit the
  // setting), not into the project's: the in-memory server forgets the histories that name them. In the
  // project's state folder, not the temp dir, which is the workspaces' root here (a worker refuses roots
  // that hold its store). Removed at stop.
  let ownStore: string | undefined;
  if (!process.env.STARRY_STORE_DIR && !process.env.STARRY_STORE_BUCKET) {
    mkdirSync(stateDir(), { recursive: true });
    process.env.STARRY_STORE_DIR = ownStore = mkdtempSync(path.join(stateDir(), `bench-store-${name}-`));
  }
  const metricsPort = opts.metrics ? await freePort() : undefined;
  const server = await startDevServer({
    port: await freePort(),
    uiPort: await freePort(),
    dbFile: opts.dbFile ? path.join(dir, 'server.db') : null,
    logFile: path.join(dir, 'server.log'),
    ...(metricsPort ? { metricsPort } : {}),
  });
  let stack: BenchStack;
  try {
    stack = await connectTo(server, name, dir, metricsPort, opts);
  } catch (err) {
    await server.stop(); // a benchmark that cannot start leaves no server behind
    throw err;
  }
  const { stop } = stack;
  return {
    ...stack,
    async stop() {
      await stop();
      if (ownStore) {
        delete process.env.STARRY_STORE_DIR; // a next stack in this process gets its own
        rmSync(ownStore, { recursive: true, force: true });
      }
      if (process.env.STARRY_BENCH_KEEP === '1')
        process.stderr.write(`kept the benchmark's folder (STARRY_BENCH_KEEP=1): ${dir}\n`);
      else rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function connectTo(
  server: DevServer,
  name: string,
  dir: string,
  metricsPort: number | undefined,
  opts: { worker?: boolean; acceptTimeoutMs?: number; activityInterceptors?: ActivityInterceptorsFactory[] },
): Promise<BenchStack> {
  const { acceptTimeoutMs, activityInterceptors } = opts;
  const taskQueue = `bench-${name}-${process.pid}`;
  // The same in-process worker the CLI embeds and the tests use, with production settings.
  const worker =
    (opts.worker ?? true)
      ? await startEmbeddedWorker({ address: server.address, namespace: 'default' }, taskQueue, {
          activities: { alerts: { log: () => undefined } },
          ...(activityInterceptors ? { interceptors: { activity: activityInterceptors } } : {}),
        })
      : undefined;
  const connection = await Connection.connect({ address: server.address });
  return {
    agents: new AgentClient({ connection, taskQueue, ...(acceptTimeoutMs ? { acceptTimeoutMs } : {}) }),
    address: server.address,
    taskQueue,
    dir,
    serverPid: server.pid,
    cpu: () => {
      const own = process.cpuUsage();
      return { serverMs: processCpuMs(server.pid), workerMs: (own.user + own.system) / 1000 };
    },
    counters: async () => {
      if (!metricsPort) throw new Error('start the bench stack with { metrics: true } to read the server counters');
      // The server publishes its counters about once a second: a read right after a run missed up to
      // a second of it (a 0.5 s phase read as no requests at all).
      await new Promise((resolve) => setTimeout(resolve, COUNTERS_PUBLISHED_MS));
      return requestCounters(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
    },
    async stop() {
      await worker?.stop();
      await connection.close();
      await server.stop();
    },
  };
}

/**
 * The project's side of the floor's iteration, in `dir`: a workspace holding one file, and a scripted
 * controller that calls `fs.list` at every tick but the last, which answers (an instant LLM turn and a
 * tool call a tick, like the floor's two activities). Returns the agent config for the task.
 */
export function listingTask(dir: string, ticks: number): AgentConfig {
  mkdirSync(path.join(dir, 'ws'), { recursive: true });
  writeFileSync(path.join(dir, 'ws', 'notes.md'), '# Notes\n');
  const turn = { toolCalls: [{ name: 'fs.list', args: {} }], usage: { inputTokens: 100, outputTokens: 10 } };
  const script = path.join(dir, 'turns.json');
  writeFileSync(
    script,
    JSON.stringify({
      turns: [
        ...Array.from({ length: ticks - 1 }, () => turn),
        { text: 'Done.', usage: { inputTokens: 100, outputTokens: 5 } },
      ],
    }),
  );
  return parseAgentConfig(
    { workspace: [path.join(dir, 'ws')], verify: false, safety: { maxTicks: ticks + 5 } },
    `scripted:${script}`,
  );
}

/**
 * Each activity's own time on the worker's clock, by activity type: from the call of its function
 * (after the SDK took the task and decoded its input) until the function settled, the SDK's encoding
 * and the completion's way to the server excluded.
 *
 * ```ts
 * const timer = activityTimer();
 * const stack = await startBenchStack('x', { activityInterceptors: [timer.interceptor] });
 * ```
 */
export function activityTimer(): { interceptor: ActivityInterceptorsFactory; times: Map<string, number[]> } {
  const times = new Map<string, number[]>();
  const interceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: {
      async execute(input, next) {
        const started = performance.now();
        try {
          return await next(input);
        } finally {
          const type = ctx.info.activityType;
          const seen = times.get(type) ?? [];
          seen.push(performance.now() - started);
          times.set(type, seen);
        }
      },
    },
  });
  return { interceptor, times };
}

/**
 * The floor's worker, on the task queue `<stack's>-floor`: two no-op activities an iteration
 * (`bench/floor-workflows.ts`), with the same SDK defaults and heartbeat settings as the project's
 * worker (workers/worker.ts). `stop()` shuts it down.
 */
export async function startFloorWorker(
  address: string,
  taskQueue: string,
  activityInterceptors?: ActivityInterceptorsFactory[],
): Promise<{ stop(): Promise<void> }> {
  const worker = await Worker.create({
    ...(activityInterceptors ? { interceptors: { activity: activityInterceptors } } : {}),
    connection: await connectWorker({ address, namespace: 'default' }),
    taskQueue,
    workflowsPath: require.resolve('./floor-workflows'),
    activities: { async noop() {} },
    maxHeartbeatThrottleInterval: '500 milliseconds',
    defaultHeartbeatThrottleInterval: '500 milliseconds',
    // As many workflow tasks at once as the project's worker takes (STARRY_MAX_CONCURRENT_WORKFLOW_TASKS).
    maxConcurrentWorkflowTaskExecutions: workflowTaskSlots(
      workerConfigFromEnv().maxConcurrentWorkflowTaskExecutions,
      undefined,
    ),
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
    },
  };
}

/**
 * `count` more `starry worker` processes on the stack's server (on `taskQueue`, default the stack's),
 * each logging to `log(i)`; resolves once the queue has `alreadyPolling + count` distinct pollers.
 *
 * ```ts
 * const children = await spawnWorkers(stack, { count: 1, alreadyPolling: 1, log: (i) => `${stack.dir}/w${i}.log` });
 * ```
 */
export async function spawnWorkers(
  stack: BenchStack,
  opts: {
    count: number;
    log: (i: number) => string;
    taskQueue?: string;
    env?: NodeJS.ProcessEnv;
    alreadyPolling?: number;
  },
): Promise<ChildProcess[]> {
  const cli = path.join(__dirname, '..', '..', 'bin', 'starry.js');
  const taskQueue = opts.taskQueue ?? stack.taskQueue;
  const env = { ...(opts.env ?? process.env), TEMPORAL_ADDRESS: stack.address, STARRY_TASK_QUEUE: taskQueue };
  const children = Array.from({ length: opts.count }, (_, i) => {
    const log = openSync(opts.log(i), 'a');
    return spawn(process.execPath, [cli, 'worker'], { env, stdio: ['ignore', log, log] });
  });
  const expected = (opts.alreadyPolling ?? 0) + opts.count;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { pollers } = await stack.agents.client.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: taskQueue },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    });
    if (new Set((pollers ?? []).map((p) => p.identity)).size >= expected) return children;
    if (children.some((c) => c.exitCode !== null) || Date.now() > deadline) {
      for (const c of children) c.kill('SIGTERM');
      throw new Error(`the ${taskQueue} workers did not poll within 60 s; see ${opts.log(0)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The server's request counters from its Prometheus text, summed by operation, e.g.
 * `persistence UpdateWorkflowExecution` or `service RecordActivityTaskHeartbeat` (frontend and history
 * both count a call; their sum is kept, the same for every run compared).
 */
export function requestCounters(prometheus: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of prometheus.split('\n')) {
    const m = /^(service|persistence|visibility_persistence)_requests\{(.*)\} ([0-9.e+]+)$/.exec(line);
    const op = m && /(?:^|,)operation="([^"]+)"/.exec(m[2] as string);
    if (!m || !op) continue;
    const key = `${m[1]} ${op[1]}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

/** A process's CPU time (user + system) in ms, from /proc (Linux); NaN elsewhere. */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are the 14th and 15th fields of the line, in clock ticks (100 a second).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/**
 * Counts of two runs compared per tick: the `n` keys whose values differ most (`absolute`: either way;
 * otherwise the project's excess first), each at least 0.05 a tick in one run; `scale` turns a count
 * into the unit printed.
 */
export function differing(
  floor: Map<string, number>,
  floorTicks: number,
  project: Map<string, number>,
  projectTicks: number,
  opts: { n: number; scale?: number; absolute?: boolean; pick?: (key: string) => boolean },
): Array<{ key: string; floor: number; project: number }> {
  const per = (m: Map<string, number>, ticks: number, k: string) => ((m.get(k) ?? 0) * (opts.scale ?? 1)) / ticks;
  const gap = (r: { floor: number; project: number }) =>
    opts.absolute ? Math.abs(r.project - r.floor) : r.project - r.floor;
  return [...new Set([...floor.keys(), ...project.keys()])]
    .filter(opts.pick ?? (() => true))
    .map((key) => ({ key, floor: per(floor, floorTicks, key), project: per(project, projectTicks, key) }))
    .filter((r) => r.floor >= 0.05 || r.project >= 0.05)
    .sort((a, b) => gap(b) - gap(a))
    .slice(0, opts.n);
}

/**
 * The error lines of the server's log, by whose workflow they name: the floor's (`floor-…`), the
 * project's (its agents' and tasks', `agent-…`), another (the server's own) or none. The SQLite
 * server's persistence deadline in a start burst hits either side.
 *
 * ```ts
 * const { total, first } = serverErrors(path.join(stack.dir, 'server.log')); // read before stack.stop()
 * ```
 */
export function serverErrors(logFile: string): {
  total: number;
  floor: number;
  project: number;
  other: number;
  first: string[];
} {
  let lines: string[] = [];
  try {
    lines = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => /"level":"error"|level=error|\tERROR\t/i.test(l));
  } catch {
    // no log: no errors to count
  }
  const ids = lines.map((l) => /wf-id[=":]+([^\s",]+)/.exec(l)?.[1]);
  const floor = ids.filter((id) => id?.startsWith('floor-')).length;
  const project = ids.filter((id) => id?.startsWith('agent-')).length;
  // What the first few say (the log goes with the benchmark's folder): the message, whose, the error.
  const field = (l: string, k: string) => new RegExp(`${k}=("[^"]*"|\\S+)`).exec(l)?.[1];
  const first = lines
    .slice(0, 3)
    .map((l) => [field(l, 'msg'), field(l, 'wf-id'), field(l, 'error')].filter(Boolean).join(' '));
  return { total: lines.length, floor, project, other: lines.length - floor - project, first };
}

/** CPU, node, Temporal CLI and OS, for the table's heading. */
export function environmentLine(): string {
  let cli = 'unknown';
  try {
    cli = execFileSync(temporalCliPath(), ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // reported as unknown
  }
  const cpus = os.cpus();
  return `CPU: ${cpus[0]?.model ?? 'unknown'} × ${cpus.length} · node ${process.version} · ${cli} · ${os.platform()} ${os.release()}`;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

/**
 * Run `fn` over `items`, `k` at a time.
 *
 * ```ts
 * await pool(agentIds, 20, async (agentId) => { await agents.submit(agentId, input); });
 * ```
 */
export async function pool<T>(items: T[], k: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(k, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i] as T, i);
      }
    }),
  );
}

/** A server timestamp in milliseconds. */
export const eventMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

/**
 * The events of every run of `workflowId`, the first run's first: a long task continues as new when
 * Temporal suggests it (at about 4,000 events, some 330 ticks), and its latest run alone would
 * measure only its last ticks. Follows each run's `continuedExecutionRunId` back to the first.
 */
export async function allRunsEvents(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  return (await allRuns(client, workflowId)).flat();
}

/** Each run's events of the workflow `workflowId`, the first run first (each one a history to replay). */
export async function allRuns(client: Client, workflowId: string): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | undefined;
  for (;;) {
    const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
    if (!runId) return runs;
  }
}
