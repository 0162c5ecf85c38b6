/**
 * Throughput against Temporal's own floor (issue 17): per-tick latency and ticks per second as agents
 * multiply. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * One in-memory dev server, one process with two in-process workers of the same settings
 * (`dev/embedded.ts`): the project's, and a floor worker whose workflow does two no-op activities per
 * iteration (`bench/floor-workflows.ts`). For each scenario (agents × ticks) the floor runs first, then
 * the project: each agent gets one task whose scripted controller calls `fs.list` on every tick but the
 * last (an instant LLM turn + a tool call per tick, like the floor's two activities). Measured from the
 * first start to the last completion, after one unmeasured floor workflow and one task so both sides
 * are warm. Workflow tasks and events are counted from the histories after; the CPU time of the dev
 * server and of the worker process per tick says where the time went.
 *
 * ```sh
 * npm run build && node lib/bench/throughput.js                    # 1×40, 50×10, 200×10
 * npm run build && node lib/bench/throughput.js --scenarios 1x40,50x10,200x10,1000x10
 * npm run build && node lib/bench/throughput.js --scenarios 200x10 --workers 2   # + 1 worker process
 * npm run build && node lib/bench/throughput.js --scenarios 50x10 --metrics      # + server requests by operation
 * npm run build && node lib/bench/throughput.js --scenarios 200x10 --profile-server  # + server CPU by function (perf, go)
 * npm run build && node lib/bench/throughput.js --scenarios 200x10 --own-workspaces  # each agent its own workspace
 * ```
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { agentWorkflowId } from '../workflows/messages';
import { temporalCliPath } from '../dev/paths';
import { cannotProfile, profileRows, profileServer, type ServerProfile } from './server-profile';
import {
  allRunsEvents,
  differing,
  environmentLine,
  eventMs,
  processCpuMs,
  listingTask,
  spawnWorkers,
  startBenchStack,
  startFloorWorker,
  type BenchStack,
} from './stack';

interface Scenario {
  agents: number;
  ticks: number;
}

interface Options {
  scenarios: Scenario[];
  workers: number;
  /** Count the server's requests by operation. */
  metrics: boolean;
  /** Sample the server's CPU by function. */
  profile: boolean;
  /**
   * Each agent its own workspace, as real agents have: their transcripts differ, so the store writes a
   * tick's blobs (with their fsync). By default every agent shares one, and after the first task the
   * store finds every blob already written.
   */
  ownWorkspaces: boolean;
}

function parseArgs(argv: string[]): Options {
  let spec = '1x40,50x10,200x10';
  let workers = 1;
  let metrics = false;
  let profile = false;
  let ownWorkspaces = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--scenarios' && argv[i + 1]) spec = argv[++i] as string;
    else if (argv[i] === '--workers' && argv[i + 1]) workers = Number(argv[++i]);
    else if (argv[i] === '--metrics') metrics = true;
    else if (argv[i] === '--profile-server') profile = true;
    else if (argv[i] === '--own-workspaces') ownWorkspaces = true;
    else
      throw new RangeError(
        `usage: throughput [--scenarios AxT,AxT,...] [--workers N] [--metrics] [--profile-server] [--own-workspaces]; bad ${argv[i]}`,
      );
  }
  if (!Number.isInteger(workers) || workers < 1)
    throw new RangeError(`--workers must be a whole number >= 1, got ${workers}`);
  const missing = profile ? cannotProfile() : undefined;
  if (missing) throw new RangeError(missing);
  const scenarios = spec.split(',').map((s) => {
    const [a, t] = s.split('x').map(Number);
    if (!Number.isInteger(a) || !Number.isInteger(t) || (a as number) < 1 || (t as number) < 2)
      throw new RangeError(`bad scenario "${s}": AGENTSxTICKS, ticks >= 2`);
    return { agents: a as number, ticks: t as number };
  });
  return { scenarios, workers, metrics, profile, ownWorkspaces };
}

interface Measure {
  wallMs: number;
  ticks: number;
  workflowTasks: number;
  events: number;
  /**
   * Server time in the first workflow (the floor's, or the first agent's task) from its first activity
   * scheduled to its last event: a tick's own cost, without the start.
   */
  firstMs: number;
  /** CPU time the run took, in ms: the dev server's, and the worker process's (all its threads). */
  serverCpuMs: number;
  workerCpuMs: number;
  /** Server requests by operation during the run (`--metrics`). */
  ops?: Map<string, number>;
  /** The server's CPU by function during the run (`--profile-server`). */
  profile?: ServerProfile;
}

/** What a run measures besides time: `--metrics`, `--profile-server`. */
type Extras = Pick<Options, 'metrics' | 'profile' | 'ownWorkspaces'>;

/** Sample the server while `run` runs, when asked to. */
async function sampled<T>(
  stack: BenchStack,
  extras: Extras | undefined,
  file: string,
  run: () => Promise<T>,
): Promise<T & { profile?: ServerProfile }> {
  if (!extras?.profile) return (await run()) as T & { profile?: ServerProfile };
  const profiler = await profileServer(stack.serverPid, temporalCliPath(), file);
  let out: T;
  try {
    out = await run();
  } catch (err) {
    await profiler.stop().catch(() => undefined);
    throw err;
  }
  return { ...out, profile: await profiler.stop() };
}

/** What the server counted between `before` and now, when the run reads its metrics. */
async function opsSince(
  stack: BenchStack,
  before: Map<string, number> | undefined,
): Promise<{ ops?: Map<string, number> }> {
  if (!before) return {};
  const now = await stack.counters();
  return { ops: new Map([...now].map(([k, v]) => [k, v - (before.get(k) ?? 0)])) };
}

/** Workflow tasks completed and events in the histories of `ids`, and the first one's active time. */
async function count(
  client: Client,
  ids: string[],
): Promise<{ workflowTasks: number; events: number; firstMs: number }> {
  let workflowTasks = 0;
  let events = 0;
  let firstMs = 0;
  for (let i = 0; i < ids.length; i += 20) {
    const histories = await Promise.all(ids.slice(i, i + 20).map((id) => allRunsEvents(client, id)));
    for (const [j, ev] of histories.entries()) {
      const scheduled = ev.find((e) => e.activityTaskScheduledEventAttributes);
      if (i + j === 0 && scheduled) firstMs = eventMs(ev.at(-1)?.eventTime) - eventMs(scheduled.eventTime);
      events += ev.length;
      workflowTasks += ev.filter((e) => e.workflowTaskCompletedEventAttributes).length;
    }
  }
  return { workflowTasks, events, firstMs };
}

async function floor(stack: BenchStack, s: Scenario, run: string, extras?: Extras): Promise<Measure> {
  const client = stack.agents.client;
  const ids = Array.from({ length: s.agents }, (_, i) => `floor-${run}-${i}`);
  const ops0 = extras?.metrics ? await stack.counters() : undefined;
  const measured = await sampled(stack, extras, path.join(stack.dir, `floor-${run}.perf`), async () => {
    const cpu0 = stack.cpu();
    const t0 = performance.now();
    const handles = await Promise.all(
      ids.map((workflowId) =>
        client.workflow.start('floorWorkflow', { taskQueue: `${stack.taskQueue}-floor`, workflowId, args: [s.ticks] }),
      ),
    );
    await Promise.all(handles.map((h) => h.result()));
    return { wallMs: performance.now() - t0, ...cpuSince(stack, cpu0), ...(await opsSince(stack, ops0)) };
  });
  return { ...measured, ticks: s.agents * s.ticks, ...(await count(client, ids)) };
}

async function project(stack: BenchStack, s: Scenario, run: string, extras?: Extras): Promise<Measure> {
  const dir = path.join(stack.dir, run);
  const shared = listingTask(dir, s.ticks);
  const agentIds = Array.from({ length: s.agents }, (_, i) => `tp-${run}-${i}`);
  const configs = agentIds.map((_, i) =>
    extras?.ownWorkspaces ? listingTask(path.join(dir, `agent-${i}`), s.ticks) : shared,
  );
  const ops0 = extras?.metrics ? await stack.counters() : undefined;
  const { submitted, results, ...measured } = await sampled(stack, extras, path.join(dir, 'project.perf'), async () => {
    const cpu0 = stack.cpu();
    const t0 = performance.now();
    const submitted = await Promise.all(
      agentIds.map((agentId, i) =>
        stack.agents.submit(agentId, { goal: 'list the workspace', config: configs[i] ?? shared }),
      ),
    );
    const results = await Promise.all(
      submitted.map((r, i) => stack.agents.waitForTask(agentIds[i] as string, r.taskId, { timeoutMs: 60 * 60_000 })),
    );
    return {
      submitted,
      results,
      wallMs: performance.now() - t0,
      ...cpuSince(stack, cpu0),
      ...(await opsSince(stack, ops0)),
    };
  });
  const bad = results.filter((r) => r.outcome !== 'COMPLETED' || r.ticks !== s.ticks);
  if (bad.length)
    throw new Error(
      `${bad.length} tasks did not complete in ${s.ticks} ticks: ${JSON.stringify(bad[0]).slice(0, 300)}`,
    );
  const ids = [...submitted.map((r) => r.workflowId), ...agentIds.map(agentWorkflowId)];
  return { ...measured, ticks: s.agents * s.ticks, ...(await count(stack.agents.client, ids)) };
}

/** The operations whose per-tick counts differ most between the floor and the project. */
function operationRows(
  name: string,
  floorOps: Map<string, number>,
  floorTicks: number,
  projectOps: Map<string, number>,
  projectTicks: number,
): string[] {
  return differing(floorOps, floorTicks, projectOps, projectTicks, { n: 12, absolute: true }).map(
    (o) => `| ${name} | ${o.key} | ${o.floor.toFixed(2)} | ${o.project.toFixed(2)} |`,
  );
}

function cpuSince(
  stack: BenchStack,
  before: { serverMs: number; workerMs: number },
): { serverCpuMs: number; workerCpuMs: number } {
  const now = stack.cpu();
  return { serverCpuMs: now.serverMs - before.serverMs, workerCpuMs: now.workerMs - before.workerMs };
}

/**
 * The error lines of the server's log, by whose workflow they name: the floor's (`floor-…`), the
 * project's (its agents' and tasks', `agent-…`), another (the server's own) or none. The SQLite
 * server's persistence deadline in a start burst hits either side.
 */
function serverErrors(logFile: string): {
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

async function main(): Promise<void> {
  const { scenarios, workers, ...extras } = parseArgs(process.argv.slice(2));
  const started = await startBenchStack('throughput', { metrics: extras.metrics });
  let children: ChildProcess[] = [];
  try {
    if (workers > 1)
      children = await spawnWorkers(started, {
        count: workers - 1,
        alreadyPolling: 1,
        log: (i) => path.join(started.dir, `worker-${i + 2}.log`),
      });
  } catch (err) {
    await started.stop();
    throw err;
  }
  // The workers' CPU: this process and the extra ones.
  const stack: BenchStack = {
    ...started,
    cpu: () => {
      const own = started.cpu();
      return {
        serverMs: own.serverMs,
        workerMs: own.workerMs + children.reduce((sum, c) => sum + processCpuMs(c.pid ?? 0), 0),
      };
    },
  };
  const floorWorker = await startFloorWorker(stack.address, `${stack.taskQueue}-floor`);
  const rows: string[] = [];
  const opRows: string[] = [];
  const profRows: string[] = [];
  let failed: unknown;
  try {
    // Unmeasured: one floor workflow and one task first. The first workflow on a fresh dev server gets
    // about half its workflow tasks dispatched in ~2 ms; every later one waits ~40 ms for each on the
    // sticky queue (docs/BENCHMARKS.md). Without this the floor measured 76 ms a tick against 100 warm.
    await floor(stack, { agents: 1, ticks: 10 }, 'warm');
    await project(stack, { agents: 1, ticks: 10 }, 'warm');
    for (const [i, s] of scenarios.entries()) {
      const name = `${s.agents}×${s.ticks}`;
      const f = await floor(stack, s, `${i}`, extras);
      process.stderr.write(`${name} floor: ${(f.wallMs / 1000).toFixed(1)} s\n`);
      const p = await project(stack, s, `${i}`, extras);
      process.stderr.write(`${name} project: ${(p.wallMs / 1000).toFixed(1)} s\n`);
      // One agent: the task's own time per tick (first activity to close), then the wall clock with the start.
      const perTick = (m: Measure) => `${(m.firstMs / s.ticks).toFixed(0)} (${(m.wallMs / m.ticks).toFixed(0)})`;
      const rate = (m: Measure) => m.ticks / (m.wallMs / 1000);
      // Where a tick's CPU goes: on this machine the server and the worker share its cores.
      const cpu = (m: Measure) => `${(m.serverCpuMs / m.ticks).toFixed(1)} | ${(m.workerCpuMs / m.ticks).toFixed(1)}`;
      const rss = (process.memoryUsage().rss / 2 ** 20).toFixed(0);
      rows.push(
        `| ${name} | floor | ${s.agents === 1 ? perTick(f) : '—'} | ${rate(f).toFixed(1)} | 1.00 | ${(f.workflowTasks / f.ticks).toFixed(2)} | ${(f.events / f.ticks).toFixed(1)} | ${cpu(f)} | |`,
        `| ${name} | project | ${s.agents === 1 ? perTick(p) : '—'} | ${rate(p).toFixed(1)} | ${(rate(p) / rate(f)).toFixed(2)} | ${(p.workflowTasks / p.ticks).toFixed(2)} | ${(p.events / p.ticks).toFixed(1)} | ${cpu(p)} | ${rss} |`,
      );
      if (f.ops && p.ops) opRows.push(...operationRows(name, f.ops, f.ticks, p.ops, p.ticks));
      if (f.profile && p.profile) profRows.push(...profileRows(name, f.profile, f.ticks, p.profile, p.ticks));
    }
  } catch (err) {
    failed = err;
    console.error('the benchmark failed:', err);
  } finally {
    await floorWorker.stop();
    for (const c of children) c.kill('SIGTERM');
    const errors = serverErrors(path.join(stack.dir, 'server.log'));
    await stack.stop();
    console.log(environmentLine());
    console.log(
      workers > 1
        ? `one dev server (in memory); the floor worker and a project worker in one process, ${workers - 1} more project worker process(es)\n`
        : 'one dev server (in memory), one process: the project worker and the floor worker (same settings)\n',
    );
    if (extras.ownWorkspaces)
      console.log("each agent its own workspace (--own-workspaces): the store writes every tick's transcript\n");
    console.log(
      '| agents × ticks | run | ms/tick, 1 agent: in the task (wall incl. start) | ticks/s | ratio to floor | workflow tasks/tick | events/tick | server CPU ms/tick | worker CPU ms/tick | RSS MB |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(
      `\nserver errors in its log: ${errors.total} (naming the floor's workflows ${errors.floor}, the project's ${errors.project}, other or none ${errors.other})`,
    );
    for (const e of errors.first) console.log(`- ${e}`);
    if (opRows.length) {
      console.log('\nserver requests per tick, by operation (the 12 that differ most; --metrics)\n');
      console.log('| agents × ticks | operation | floor | project |');
      console.log('|---|---|---|---|');
      for (const r of opRows) console.log(r);
    }
    if (profRows.length) {
      console.log(
        "\nthe server's CPU ms per tick by function (perf samples; --profile-server): the request handlers and queue executors that differ most, then the functions on top of the stack\n",
      );
      console.log('| agents × ticks | kind | function | floor | project |');
      console.log('|---|---|---|---|---|');
      for (const r of profRows) console.log(r);
    }
  }
  // The SDK's native runtime keeps the process alive after its workers and connections are closed.
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
