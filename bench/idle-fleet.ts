/**
 * Agents at fleet scale (issue 37): N agents on one dev server and one worker process, each started
 * with one short task and then idle; then the cost of waking an idle one, cached or evicted. Not a
 * test: it prints tables for docs/BENCHMARKS.md.
 *
 * The fleet: a dev server with a database file (its size is reported), and the production worker alone
 * in a forked process (`bench/fleet-worker.ts`), so its RSS is the worker's. Agents start K at a time
 * (a start burst of thousands swamps the SQLite server's persistence), each with one task of an instant
 * scripted LLM turn and an `fs.list` call (as bench/throughput.ts). After every `--sample-every` agents
 * the worker collects its garbage and reports its RSS and how many workflows its sticky cache holds.
 * Then every agent's and task's history is described (events, bytes, status), the server's and the
 * worker's logs are searched for errors.
 *
 * The wake (`--wake M`): M agents still in the cache and M evicted from it, one at a time, alternately.
 * The sticky cache is LRU and an agent was last touched when its task ended, so with a fleet larger than
 * the cache the agents whose tasks ended first are evicted and the last ones cached; the cached ones are
 * picked among the latest `cache − 2M` (each wake evicts at most two of the oldest cached). A wake is
 * timed from the submit to the task's first tick: the server's `ActivityTaskScheduled` time of the
 * task's first `llm` call, minus the client's clock before the submit (the same machine's clock).
 *
 * ```sh
 * npm run build && node lib/bench/idle-fleet.js                          # 10,000 agents, wake 500 + 500
 * npm run build && node lib/bench/idle-fleet.js --agents 400 --cache 150 --wake 50 --sample-every 50
 * # options: --concurrency K (default 20), --cache C (default the SDK's), --tasks N (each agent's tasks
 * # at start, default 1: longer histories to replay), --ticks T (default 2), --wake 0 (no wake)
 * ```
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AgentConfig } from '../core/config';
import {
  environmentLine,
  eventMs,
  listingTask,
  percentile,
  pool,
  serverErrors,
  startBenchStack,
  type BenchStack,
} from './stack';
import type { FleetWorkerStatus } from './fleet-worker';

interface Options {
  agents: number;
  concurrency: number;
  cache?: number;
  sampleEvery: number;
  wake: number;
  tasks: number;
  ticks: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { agents: 10_000, concurrency: 20, sampleEvery: 1000, wake: 500, tasks: 1, ticks: 2 };
  const keys = {
    '--agents': 'agents',
    '--concurrency': 'concurrency',
    '--cache': 'cache',
    '--sample-every': 'sampleEvery',
    '--wake': 'wake',
    '--tasks': 'tasks',
    '--ticks': 'ticks',
  } as const;
  for (let i = 0; i < argv.length; i += 2) {
    const key = keys[argv[i] as keyof typeof keys];
    const n = Number(argv[i + 1]);
    if (!key || !Number.isInteger(n) || n < 0)
      throw new RangeError(
        'usage: idle-fleet [--agents N] [--concurrency K] [--cache C] [--sample-every N] [--wake M] [--tasks N] ' +
          `[--ticks T]; bad ${argv[i]} ${argv[i + 1] ?? ''}`,
      );
    o[key] = n;
  }
  if (o.agents < 1 || o.concurrency < 1 || o.sampleEvery < 1 || o.tasks < 1 || o.ticks < 2)
    throw new RangeError('--agents, --concurrency, --sample-every and --tasks must be >= 1, --ticks >= 2');
  if (o.cache !== undefined && o.cache < 2)
    throw new RangeError(`--cache must be >= 2 (the SDK's minimum), got ${o.cache}`);
  return o;
}

/** Wall-clock milliseconds, comparable to the server's event times (same machine). */
const nowMs = () => performance.timeOrigin + performance.now();
const mb = (bytes: number) => bytes / 2 ** 20;

/** The forked worker process, and its answers to `status` and `gc`. */
interface FleetWorker {
  child: ChildProcess;
  ask(what: 'status' | 'gc'): Promise<FleetWorkerStatus>;
  stop(): Promise<void>;
}

async function forkWorker(stack: BenchStack, cache: number | undefined, log: string): Promise<FleetWorker> {
  const out = openSync(log, 'a');
  const child = fork(
    path.join(__dirname, 'fleet-worker.js'),
    [stack.address, stack.taskQueue, ...(cache !== undefined ? [String(cache)] : [])],
    { execArgv: ['--expose-gc'], stdio: ['ignore', out, out, 'ipc'] },
  );
  const next = () =>
    new Promise<FleetWorkerStatus>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the fleet worker exited (${code}); see ${log}`));
      child.once('exit', onExit);
      child.once('message', (m) => {
        child.off('exit', onExit);
        resolve((m as { status: FleetWorkerStatus }).status);
      });
    });
  await next(); // started and polling
  return {
    child,
    ask(what) {
      const answer = next();
      child.send(what);
      return answer;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send('stop');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

interface Sample {
  agents: number;
  rssMb: number;
  heapMb: number;
  cached: number;
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  if (points.length < 2) return NaN;
  const mx = points.reduce((s, p) => s + p[0], 0) / points.length;
  const my = points.reduce((s, p) => s + p[1], 0) / points.length;
  const num = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0);
  const den = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return den ? num / den : NaN;
}

/** min / median / max of values. */
function spread(values: number[], f: (x: number) => string = String): string {
  const s = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  return s.length ? `${f(s[0] as number)} / ${f(percentile(s, 50))} / ${f(s.at(-1) as number)}` : '—';
}

/** Lines of a worker log that say ERROR or WARN (the SDK's logger writes its level in each line). */
function logProblems(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => /\b(ERROR|WARN)\b|"level":"(error|warn)"/i.test(l));
  } catch {
    return [];
  }
}

interface Wake {
  submitMs: number;
  firstTickMs: number;
  /** The agent's workflow task that took the submit: started → completed (a replay of its history, when evicted). */
  agentTaskMs: number;
  /** The agent's history before the wake, in events: what an evicted agent replays. */
  replayedEvents: number;
}

async function wakeOne(stack: BenchStack, agentId: string, config: AgentConfig, n: number): Promise<Wake> {
  const { agents } = stack;
  const client = agents.client;
  const before = await client.workflow.getHandle(agents.agentWorkflowId(agentId)).describe();
  const t0 = nowMs();
  const r = await agents.submit(agentId, { goal: `wake ${n}`, config });
  const submitMs = nowMs() - t0;
  const result = await agents.waitForTask(agentId, r.taskId, { timeoutMs: 10 * 60_000 });
  if (result.outcome !== 'COMPLETED') throw new Error(`wake ${n} of ${agentId}: the task ended ${result.outcome}`);
  const taskEvents = (await client.workflow.getHandle(r.workflowId).fetchHistory()).events ?? [];
  const llm = taskEvents.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'llm');
  const agentEvents =
    (await client.workflow.getHandle(agents.agentWorkflowId(agentId), before.runId).fetchHistory()).events ?? [];
  const started = agentEvents.findIndex((e) => e.workflowTaskStartedEventAttributes && eventMs(e.eventTime) >= t0);
  const completed = agentEvents.slice(started).find((e) => e.workflowTaskCompletedEventAttributes);
  return {
    submitMs,
    firstTickMs: eventMs(llm?.eventTime) - t0,
    agentTaskMs: eventMs(completed?.eventTime) - eventMs(agentEvents[started]?.eventTime),
    replayedEvents: before.historyLength,
  };
}

/** `n` distinct random items of `from`. */
function pick<T>(from: T[], n: number): T[] {
  const a = [...from];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a.slice(0, n);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('fleet', { dbFile: true, worker: false });
  const workerLog = path.join(stack.dir, 'worker.log');
  let worker: FleetWorker | undefined;
  let failed: unknown;
  const samples: Sample[] = [];
  const lines: string[] = [];
  try {
    worker = await forkWorker(stack, o.cache, workerLog);
    const first = await worker.ask('gc');
    const cache = first.maxCachedWorkflows;
    samples.push({ agents: 0, rssMb: mb(first.rss), heapMb: mb(first.heapUsed), cached: first.numCachedWorkflows });
    const config = listingTask(path.join(stack.dir, 'fleet'), o.ticks);
    const ids = Array.from({ length: o.agents }, (_, i) => `fleet-${i}`);
    const finished: string[] = []; // in the order their last task ended: the sticky cache's LRU order
    const errors: string[] = [];
    const failedAgents = new Set<string>();
    const taskWorkflows: string[] = [];
    let sampling = Promise.resolve();
    const t0 = performance.now();
    await pool(ids, o.concurrency, async (agentId) => {
      try {
        for (let t = 0; t < o.tasks; t++) {
          const r = await stack.agents.submit(agentId, { goal: 'list the workspace', config });
          taskWorkflows.push(r.workflowId);
          const result = await stack.agents.waitForTask(agentId, r.taskId, { timeoutMs: 30 * 60_000 });
          if (result.outcome !== 'COMPLETED' || result.ticks !== o.ticks)
            errors.push(`${agentId}: ${result.outcome} in ${result.ticks} ticks ${result.error?.message ?? ''}`);
        }
      } catch (err) {
        errors.push(`${agentId}: ${String(err).slice(0, 200)}`);
        failedAgents.add(agentId);
      }
      finished.push(agentId);
      if (finished.length % o.sampleEvery === 0) {
        const at = finished.length;
        sampling = sampling.then(async () => {
          const s = await worker!.ask('gc');
          samples.push({ agents: at, rssMb: mb(s.rss), heapMb: mb(s.heapUsed), cached: s.numCachedWorkflows });
          process.stderr.write(
            `${at} agents: worker RSS ${mb(s.rss).toFixed(0)} MB, ${s.numCachedWorkflows} cached, ${((performance.now() - t0) / 1000).toFixed(0)} s\n`,
          );
        });
      }
    });
    const startSec = (performance.now() - t0) / 1000;
    await sampling;
    const end = await worker.ask('gc');
    if (samples.at(-1)?.agents !== o.agents)
      samples.push({ agents: o.agents, rssMb: mb(end.rss), heapMb: mb(end.heapUsed), cached: end.numCachedWorkflows });

    // Every agent's and task's history: length, size, status.
    const agentsH: Array<{ events: number; bytes: number; status: string }> = [];
    const tasksH: Array<{ events: number; bytes: number; status: string }> = [];
    const client = stack.agents.client;
    // A submit that failed may have left no workflow at all.
    const described = async (workflowId: string) => {
      const d = await client.workflow
        .getHandle(workflowId)
        .describe()
        .catch(() => undefined);
      return d
        ? { events: d.historyLength, bytes: d.historySize ?? NaN, status: d.status.name }
        : { events: NaN, bytes: NaN, status: 'MISSING' };
    };
    await pool(ids, o.concurrency, async (agentId) => {
      agentsH.push(await described(stack.agents.agentWorkflowId(agentId)));
    });
    await pool(taskWorkflows, o.concurrency, async (workflowId) => {
      tasksH.push(await described(workflowId));
    });
    const db = ['server.db', 'server.db-wal', 'server.db-shm']
      .map((f) => path.join(stack.dir, f))
      .filter((f) => existsSync(f))
      .reduce((s, f) => s + statSync(f).size, 0);

    const filling = samples.filter((s) => s.agents <= cache).map((s): [number, number] => [s.agents, s.rssMb]);
    const full = samples.filter((s) => s.agents >= cache).map((s): [number, number] => [s.agents, s.rssMb]);
    const atFull = samples.filter((s) => s.agents >= cache)[0];
    lines.push(
      `Idle fleet: ${o.agents} agents, ${o.tasks} task(s) of ${o.ticks} ticks each at start, ${o.concurrency} at a time; ` +
        `one worker process, maxCachedWorkflows ${cache} ` +
        `(${o.cache !== undefined ? '--cache' : `the SDK's default for a ${mb(first.heapLimit).toFixed(0)} MB heap`}); ` +
        'one dev server with a database file',
      environmentLine(),
      '',
      '| agents started | worker RSS MB | main thread heap MB (after a GC) | workflows in the sticky cache |',
      '|---|---|---|---|',
      ...samples.map((s) => `| ${s.agents} | ${s.rssMb.toFixed(0)} | ${s.heapMb.toFixed(0)} | ${s.cached} |`),
      '',
      '| figure | value |',
      '|---|---|',
      `| started in | ${startSec.toFixed(0)} s (${(o.agents / startSec).toFixed(1)} agents/s, each submit + task + result) |`,
      `| worker RSS growth per cached agent (slope while the cache fills) | ${(slope(filling) * 1024).toFixed(0)} KB |`,
      '| worker RSS growth per agent once the cache is full (each evicts one) | ' +
        `${full.length >= 2 ? `${(slope(full) * 1024).toFixed(0)} KB` : '— (the fleet did not fill the cache)'} |`,
      `| worker RSS with the cache full | ${atFull ? `${atFull.rssMb.toFixed(0)} MB at ${atFull.agents} agents` : '—'} |`,
      `| worker RSS at the end, ${Math.max(0, o.agents - cache)} agents evicted | ${mb(end.rss).toFixed(0)} MB, ${end.numCachedWorkflows} cached |`,
      `| server database (file + WAL) | ${mb(db).toFixed(1)} MB, ${(db / 1024 / o.agents).toFixed(1)} KB an agent |`,
      `| agent history: events (min / median / max) | ${spread(agentsH.map((h) => h.events))} |`,
      `| agent history: KB | ${spread(
        agentsH.map((h) => h.bytes / 1024),
        (x) => x.toFixed(1),
      )} |`,
      `| task history: events | ${spread(tasksH.map((h) => h.events))} |`,
      `| task history: KB | ${spread(
        tasksH.map((h) => h.bytes / 1024),
        (x) => x.toFixed(1),
      )} |`,
      `| agents not running | ${agentsH.filter((h) => h.status !== 'RUNNING').length} |`,
      `| tasks not completed | ${tasksH.filter((h) => h.status !== 'COMPLETED').length} |`,
      `| submits or tasks that failed | ${errors.length}${errors[0] ? ` (first: ${errors[0]})` : ''} |`,
    );
    process.stderr.write(`fleet started: ${startSec.toFixed(0)} s; histories described\n`);

    if (o.wake > 0) {
      const warm = 2;
      // An agent whose start failed is not idle: neither pool takes it.
      const idle = (id: string) => !failedAgents.has(id);
      const evictedPool = finished.slice(0, Math.max(0, o.agents - cache)).filter(idle);
      const cachedPool = finished.slice(Math.max(0, o.agents - cache + 2 * (o.wake + warm))).filter(idle);
      if (evictedPool.length < o.wake + warm || cachedPool.length < o.wake + warm)
        throw new RangeError(
          `--wake ${o.wake} needs at least ${o.wake + warm} evicted agents (agents − cache = ${evictedPool.length}) ` +
            `and as many cached beyond the ${2 * (o.wake + warm)} a wake may evict ` +
            `(cache − ${2 * (o.wake + warm)} = ${cachedPool.length}): raise --agents or --cache, or lower --wake`,
        );
      const before = await worker.ask('status');
      const cachedIds = pick(cachedPool, o.wake + warm);
      const evictedIds = pick(evictedPool, o.wake + warm);
      const cached: Wake[] = [];
      const evicted: Wake[] = [];
      for (let i = 0; i < o.wake + warm; i++) {
        const c = await wakeOne(stack, cachedIds[i] as string, config, i);
        const e = await wakeOne(stack, evictedIds[i] as string, config, i);
        if (i >= warm) {
          cached.push(c);
          evicted.push(e);
        }
        if ((i + 1) % 50 === 0) process.stderr.write(`woken ${i + 1} + ${i + 1}\n`);
      }
      const p = (ws: Wake[], k: keyof Wake, q: number) =>
        percentile(
          [...ws.map((w) => w[k])].sort((a, b) => a - b),
          q,
        );
      const cells = (ws: Wake[]) =>
        `${p(ws, 'submitMs', 50).toFixed(1)} | ${p(ws, 'submitMs', 99).toFixed(1)} | ` +
        `${p(ws, 'firstTickMs', 50).toFixed(1)} | ${p(ws, 'firstTickMs', 99).toFixed(1)} | ` +
        `${p(ws, 'agentTaskMs', 50).toFixed(1)} | ${p(ws, 'agentTaskMs', 99).toFixed(1)} | ${p(ws, 'replayedEvents', 50)}`;
      lines.push(
        '',
        `Wake: ${o.wake} cached and ${o.wake} evicted agents (+${warm} of each unmeasured), alternately, one at a time; ` +
          `before: ${before.numCachedWorkflows} of ${cache} cached, ${o.agents} agents`,
        '',
        "| agent | submit returned p50 ms | p99 ms | first tick p50 ms | p99 ms | the agent's workflow task p50 ms | p99 ms | its history (events) |",
        '|---|---|---|---|---|---|---|---|',
        `| in the cache | ${cells(cached)} |`,
        `| evicted | ${cells(evicted)} |`,
        '',
        `evicted over cached, first tick p99: ${(p(evicted, 'firstTickMs', 99) / p(cached, 'firstTickMs', 99)).toFixed(2)} (target <= 2)`,
      );
    }
  } catch (err) {
    failed = err;
    console.error('the benchmark failed:', err);
  } finally {
    await worker?.stop();
    const server = serverErrors(path.join(stack.dir, 'server.log'));
    const workerProblems = logProblems(workerLog);
    await stack.stop();
    lines.push(
      '',
      `server errors in its log: ${server.total}; worker log lines at WARN or ERROR: ${workerProblems.length}`,
      ...server.first.map((e) => `- ${e}`),
      ...workerProblems.slice(0, 3).map((l) => `- ${l.slice(0, 300)}`),
    );
    console.log(lines.join('\n'));
  }
  // The SDK's native runtime keeps the process alive after its connections are closed.
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
