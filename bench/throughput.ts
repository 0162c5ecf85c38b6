/**
 * Throughput against Temporal's own floor (issue 17): per-tick latency and ticks per second as agents
 * multiply. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * One in-memory dev server, one process with two in-process workers of the same settings
 * (`dev/embedded.ts`): the project's, and a floor worker whose workflow does two no-op activities per
 * iteration (`bench/floor-workflows.ts`). For each scenario (agents × ticks) the floor runs first, then
 * the project: each agent gets one task whose scripted controller calls `fs.list` on every tick but the
 * last (an instant LLM turn + a tool call per tick, like the floor's two activities). Between them runs
 * the floor in the agents' shape (`floorAgentWorkflow`): the same no-op iterations as a child workflow of
 * an agent started by its submit, with the check and the search attributes an agent's task has, so the
 * table says how much of the gap is the shape's own cost to Temporal and how much the project's work.
 * Measured from the first start to the last completion, after one unmeasured run of each so all sides
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
 * npm run build && node lib/bench/throughput.js --scenarios 1000x10 --workers 2 --halt-runs 10  # + halts under load
 * ```
 *
 * Every run also says which worker process completed how many workflow tasks and activities (the
 * histories' `identity`), and that nothing ran twice: no activity retried, no workflow task failed or
 * timed out, every task started once and its `llm` calls one a tick. `--halt-runs N` measures
 * bench/halt-latency.ts's halt (`--halt-queued`, default 100) during each project run; the halted agents
 * add their own load, so that run's ratio is not comparable with one without.
 */
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { SubmitTaskResult, TaskResult } from '../core/contract';
import { agentWorkflowId } from '../workflows/messages';
import { AgentStateKey } from '../workflows/search-attributes';
import { floorSubmitUpdate } from './floor-workflows';
import { temporalCliPath } from '../dev/paths';
import { oneRun, slowTurnConfig, type Sample as HaltSample } from './halt-latency';
import { replayInThread, type ToReplay } from './replay-thread';
import { cannotProfile, profileRows, profileServer, type ServerProfile } from './server-profile';
import {
  allRuns,
  differing,
  environmentLine,
  eventMs,
  processCpuMs,
  listingTask,
  percentile,
  pool,
  serverErrors,
  spawnWorkers,
  startBenchStack,
  startFloorWorker,
  type BenchStack,
} from './stack';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Submits of a project run waiting for their agent at once (a bulk client's window). */
const SUBMITS_IN_FLIGHT = 100;

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
  /** Halts measured during each project run (bench/halt-latency.ts's method), and the tasks queued behind each. */
  haltRuns: number;
  haltQueued: number;
}

function parseArgs(argv: string[]): Options {
  let spec = '1x40,50x10,200x10';
  let workers = 1;
  let metrics = false;
  let profile = false;
  let ownWorkspaces = false;
  let haltRuns = 0;
  let haltQueued = 100;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--scenarios' && argv[i + 1]) spec = argv[++i] as string;
    else if (argv[i] === '--workers' && argv[i + 1]) workers = Number(argv[++i]);
    else if (argv[i] === '--metrics') metrics = true;
    else if (argv[i] === '--profile-server') profile = true;
    else if (argv[i] === '--own-workspaces') ownWorkspaces = true;
    else if (argv[i] === '--halt-runs' && argv[i + 1]) haltRuns = Number(argv[++i]);
    else if (argv[i] === '--halt-queued' && argv[i + 1]) haltQueued = Number(argv[++i]);
    else
      throw new RangeError(
        'usage: throughput [--scenarios AxT,AxT,...] [--workers N] [--metrics] [--profile-server] [--own-workspaces] ' +
          `[--halt-runs N] [--halt-queued N]; bad ${argv[i]}`,
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
  for (const [flag, n] of [
    ['--halt-runs', haltRuns],
    ['--halt-queued', haltQueued],
  ] as const)
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`${flag} must be a whole number >= 0, got ${n}`);
  return { scenarios, workers, metrics, profile, ownWorkspaces, haltRuns, haltQueued };
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
  execution: Execution;
}

/** What a run measures besides time: `--metrics`, `--profile-server`. */
type Extras = Pick<Options, 'metrics' | 'profile' | 'ownWorkspaces'>;

/**
 * Halts while the project's run is under way (until `load.endedAt`): bench/halt-latency.ts's run, one
 * after the other, up to `runs`; a halt sent after the load ended is not kept, nor one that failed (its
 * reason is kept; three failures end the halts). Starts a second in.
 */
async function haltsUnderLoad(
  stack: BenchStack,
  load: { endedAt?: number },
  o: { runs: number; queued: number },
): Promise<{ kept: HaltSample[]; dropped: number; failures: string[] }> {
  // Under load the queue takes longer to fill than the 30 s an idle machine needs: a 5-minute call.
  const config = slowTurnConfig(stack.dir, 5 * 60_000);
  const kept: HaltSample[] = [];
  const failures: string[] = [];
  let dropped = 0;
  await new Promise((r) => setTimeout(r, 1000));
  while (load.endedAt === undefined && kept.length < o.runs && failures.length < 3) {
    const run = kept.length + dropped + failures.length + 1;
    try {
      const sample = await oneRun(stack.agents, config, run, { queued: o.queued, pollMs: 5, queueAtOnce: true });
      const ms = (x: number) => x.toFixed(0);
      process.stderr.write(
        `halt ${run}: halt() returned ${ms(sample.signalMs)}, signal recorded ${ms(sample.signaledMs)}, ` +
          `its workflow task scheduled ${ms(sample.haltTaskScheduledMs)}, started ${ms(sample.haltTaskStartedMs)}, ` +
          `completed ${ms(sample.haltTaskCompletedMs)}, STOPPED seen ${ms(sample.stoppedMs)} ms\n`,
      );
      if (load.endedAt === undefined || sample.sentAtMs < load.endedAt) kept.push(sample);
      else dropped++;
    } catch (err) {
      failures.push(String(err).slice(0, 200));
    }
  }
  return { kept, dropped, failures };
}

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

/**
 * Who did the work, and whether any of it ran twice: workflow tasks and activities completed by each
 * worker identity; activities that ran more than one attempt, workflow tasks that failed or timed out
 * (each re-runs on a worker), task workflows an agent started twice, tasks whose `llm` calls completed
 * other than once a tick.
 */
interface Execution {
  byIdentity: Map<string, { workflowTasks: number; activities: number }>;
  retriedActivities: number;
  failedWorkflowTasks: number;
  /**
   * Sticky workflow tasks no worker took within the sticky queue's schedule-to-start timeout (the SDK's
   * 10 s): the server moved them to the normal queue, where any worker takes them (with the history).
   * None of them ran, so nothing runs twice; a saturated worker sheds its backlog this way.
   */
  movedWorkflowTasks: number;
  tasksStartedTwice: number;
  ticksNotOnce: number;
  /** Runs replayed against the workers' workflow code (`replay`), and those that did not replay: each names its workflow and why. */
  replayed: number;
  replayFailures: string[];
  /** Per task: its close (the server's time) to the client's wait returning its result (ms; `seenAt`). */
  seenLagMs: number[];
  /** Per task: its close to the agent's workflow task that recorded its result completing (server times, ms). */
  recordLagMs: number[];
  /** That workflow task: scheduled → a worker took it (ms), and how many were scheduled on the normal queue, not a worker's sticky one. */
  recordWaitMs: number[];
  recordedOnNormalQueue: number;
  /** Every workflow task's and activity's wait for a worker (scheduled → started, ms), by kind. */
  waits: Map<string, number[]>;
  /** The task workflows' workflow tasks on sticky queues: when each was scheduled (server ms) and how long it waited. */
  tickWaits: [number, number][];
}

/**
 * Workflow tasks completed and events in the histories of `ids`, the first one's active time, and who
 * ran them; with `replay`, every run replayed against the workers' workflow code (the replay guarantee,
 * after a run on several workers); with `seenAt` (a task workflow's id → when the client's wait returned
 * its result, wall ms), how long after each task closed the client saw it.
 */
async function count(
  client: Client,
  ids: string[],
  ticks: number,
  o: { replay?: boolean; seenAt?: Map<string, number> } = {},
): Promise<{ workflowTasks: number; events: number; firstMs: number; execution: Execution }> {
  let workflowTasks = 0;
  let events = 0;
  let firstMs = 0;
  const execution: Execution = {
    byIdentity: new Map(),
    retriedActivities: 0,
    failedWorkflowTasks: 0,
    movedWorkflowTasks: 0,
    tasksStartedTwice: 0,
    ticksNotOnce: 0,
    replayed: 0,
    replayFailures: [],
    seenLagMs: [],
    recordLagMs: [],
    recordWaitMs: [],
    recordedOnNormalQueue: 0,
    waits: new Map(),
    tickWaits: [],
  };
  const waited = (kind: string, ms: number) => {
    const v = execution.waits.get(kind) ?? [];
    v.push(ms);
    execution.waits.set(kind, v);
  };
  // When each task closed, and when its agent's workflow task that took the close completed.
  const closedAt = new Map<string, number>();
  const recordedAt = new Map<string, number>();
  const toReplay: ToReplay[] = [];
  const by = (identity: string | null | undefined) => {
    const key = identity ?? 'unknown';
    const row = execution.byIdentity.get(key) ?? { workflowTasks: 0, activities: 0 };
    execution.byIdentity.set(key, row);
    return row;
  };
  for (let i = 0; i < ids.length; i += 20) {
    const batch = ids.slice(i, i + 20);
    const runs = await Promise.all(batch.map((id) => allRuns(client, id)));
    for (const [j, ev] of runs.map((r) => r.flat()).entries()) {
      const id = batch[j] as string;
      if (o.replay)
        for (const [k, events] of (runs[j] ?? []).entries())
          toReplay.push({ workflowId: `${id} (run ${k + 1})`, events });
      const closed = ev.at(-1);
      if (closed?.workflowExecutionCompletedEventAttributes) closedAt.set(id, eventMs(closed.eventTime));
      const childClosed: string[] = [];
      const scheduled = ev.find((e) => e.activityTaskScheduledEventAttributes);
      if (i + j === 0 && scheduled) firstMs = eventMs(ev.at(-1)?.eventTime) - eventMs(scheduled.eventTime);
      events += ev.length;
      const llmScheduled = new Set<string>();
      let llmCompleted = 0;
      const children = new Set<string>();
      let lastScheduled: HistoryEvent | undefined;
      let lastStartedMs = 0;
      const type = ev[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '?';
      const activityScheduled = new Map<string, HistoryEvent>();
      for (const e of ev) {
        if (e.workflowTaskScheduledEventAttributes) lastScheduled = e;
        if (e.workflowTaskStartedEventAttributes) {
          lastStartedMs = eventMs(e.eventTime);
          const sticky =
            lastScheduled?.workflowTaskScheduledEventAttributes?.taskQueue?.kind ===
            temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_STICKY;
          const why = type === 'agentWorkflow' ? (childClosed.length ? ', a child closed' : ', other') : '';
          if (lastScheduled && sticky && type === 'taskWorkflow')
            execution.tickWaits.push([
              eventMs(lastScheduled.eventTime),
              lastStartedMs - eventMs(lastScheduled.eventTime),
            ]);
          if (lastScheduled)
            waited(
              `${type} workflow task${why} (${sticky ? 'sticky' : 'normal'})`,
              lastStartedMs - eventMs(lastScheduled.eventTime),
            );
        }
        if (e.activityTaskScheduledEventAttributes) activityScheduled.set(String(e.eventId), e);
        const started = activityScheduled.get(String(e.activityTaskStartedEventAttributes?.scheduledEventId));
        if (e.activityTaskStartedEventAttributes && started)
          waited(
            `${type} activity ${started.activityTaskScheduledEventAttributes?.activityType?.name}`,
            eventMs(e.eventTime) - eventMs(started.eventTime),
          );
        if (e.workflowTaskCompletedEventAttributes) {
          workflowTasks++;
          by(e.workflowTaskCompletedEventAttributes.identity).workflowTasks++;
          if (childClosed.length && lastScheduled) {
            execution.recordWaitMs.push(lastStartedMs - eventMs(lastScheduled.eventTime));
            const kind = lastScheduled.workflowTaskScheduledEventAttributes?.taskQueue?.kind;
            if (kind !== temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_STICKY) execution.recordedOnNormalQueue++;
          }
          for (const c of childClosed.splice(0)) recordedAt.set(c, eventMs(e.eventTime));
        }
        const ended = e.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId;
        if (ended) childClosed.push(ended);
        if (e.activityTaskCompletedEventAttributes) {
          by(e.activityTaskCompletedEventAttributes.identity).activities++;
          if (llmScheduled.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId))) llmCompleted++;
        }
        if ((e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1) execution.retriedActivities++;
        const timedOut = e.workflowTaskTimedOutEventAttributes;
        if (timedOut?.timeoutType === temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START)
          execution.movedWorkflowTasks++;
        else if (e.workflowTaskFailedEventAttributes || timedOut) execution.failedWorkflowTasks++;
        if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'llm') llmScheduled.add(String(e.eventId));
        const child = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
        if (child) {
          if (children.has(child)) execution.tasksStartedTwice++;
          children.add(child);
        }
      }
      // A task's history (it calls the LLM): one call a tick, each completed once.
      if (llmScheduled.size && (llmScheduled.size !== ticks || llmCompleted !== ticks)) execution.ticksNotOnce++;
    }
  }
  for (const [id, seen] of o.seenAt ?? []) {
    const closed = closedAt.get(id);
    const recorded = recordedAt.get(id);
    if (closed === undefined) continue;
    execution.seenLagMs.push(seen - closed);
    if (recorded !== undefined) execution.recordLagMs.push(recorded - closed);
  }
  if (toReplay.length) {
    // In a thread of its own: a replay leaves the SDK's promise hooks on the thread that ran it, and this
    // thread runs the activities of the runs still to measure (bench/replay-thread.ts).
    const { replayed, failures } = await replayInThread(toReplay, 'throughput-replay');
    execution.replayed = replayed;
    execution.replayFailures.push(...failures);
  }
  return { workflowTasks, events, firstMs, execution };
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
  return { ...measured, ticks: s.agents * s.ticks, ...(await count(client, ids, s.ticks)) };
}

/** A child workflow's result once it ends: the agent accepts a submit before its child exists on the server. */
async function taskResult(client: Client, workflowId: string): Promise<unknown> {
  for (;;) {
    try {
      return await client.workflow.getHandle(workflowId).result();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

/**
 * The floor in the agents' shape (`floorAgentWorkflow`, bench/floor-workflows.ts): each agent started by
 * its submit (update-with-start), the submit checked by one no-op activity, the task a child workflow of
 * `s.ticks` iterations, the search attributes written as the project's agents and tasks write them. The
 * client sends the submits as the project's run does and waits for each task's result.
 */
async function agentShapedFloor(stack: BenchStack, s: Scenario, run: string, extras?: Extras): Promise<Measure> {
  const client = stack.agents.client;
  const taskQueue = `${stack.taskQueue}-floor`;
  const agentIds = Array.from({ length: s.agents }, (_, i) => `floor-agent-${run}-${i}`);
  const ops0 = extras?.metrics ? await stack.counters() : undefined;
  const { taskIds, ...measured } = await sampled(
    stack,
    extras,
    path.join(stack.dir, `floor-agent-${run}.perf`),
    async () => {
      const cpu0 = stack.cpu();
      const t0 = performance.now();
      const waits: Promise<string>[] = [];
      await pool(agentIds, SUBMITS_IN_FLIGHT, async (workflowId) => {
        const update = await client.workflow.startUpdateWithStart(floorSubmitUpdate, {
          args: [s.ticks],
          waitForStage: 'ACCEPTED',
          startWorkflowOperation: new WithStartWorkflowOperation('floorAgentWorkflow', {
            workflowId,
            taskQueue,
            workflowIdConflictPolicy: 'USE_EXISTING',
            typedSearchAttributes: [{ key: AgentStateKey, value: 'IDLE' }],
          }),
        });
        const taskId = await update.result();
        const wait = taskResult(client, taskId).then(() => taskId);
        wait.catch(() => undefined); // handled by the Promise.all below, once every submit went
        waits.push(wait);
      });
      const taskIds = await Promise.all(waits);
      return { taskIds, wallMs: performance.now() - t0, ...cpuSince(stack, cpu0), ...(await opsSince(stack, ops0)) };
    },
  );
  return { ...measured, ticks: s.agents * s.ticks, ...(await count(client, [...taskIds, ...agentIds], s.ticks)) };
}

/**
 * The project's run: each agent one task of `s.ticks`. `load.endedAt` is set when its last task was seen
 * to end (before the histories are read and replayed, which the halts under load must not count).
 */
async function project(
  stack: BenchStack,
  s: Scenario,
  run: string,
  extras?: Extras,
  load: { endedAt?: number } = {},
): Promise<Measure> {
  const dir = path.join(stack.dir, run);
  const shared = listingTask(dir, s.ticks);
  const agentIds = Array.from({ length: s.agents }, (_, i) => `tp-${run}-${i}`);
  const configs = agentIds.map((_, i) =>
    extras?.ownWorkspaces ? listingTask(path.join(dir, `agent-${i}`), s.ticks) : shared,
  );
  const ops0 = extras?.metrics ? await stack.counters() : undefined;
  const seenAt = new Map<string, number>();
  const { submitted, results, ...measured } = await sampled(stack, extras, path.join(dir, 'project.perf'), async () => {
    const cpu0 = stack.cpu();
    const t0 = performance.now();
    // At most SUBMITS_IN_FLIGHT submits wait at once, as a bulk client sends them: a submit returns once
    // its agent took it, and its task runs on while the next ones go. (1,000 at once queue the new agents'
    // first workflow tasks behind each other and the running ticks for minutes on two cores.) Each
    // agent's wait starts when its submit returns, so a task is seen when it ends (the live-state figure).
    const waits: Promise<{ r: SubmitTaskResult; result: TaskResult }>[] = [];
    await pool(agentIds, SUBMITS_IN_FLIGHT, async (agentId, i) => {
      const r = await stack.agents.submit(agentId, { goal: 'list the workspace', config: configs[i] ?? shared });
      const wait = stack.agents.waitForTask(agentId, r.taskId, { timeoutMs: 60 * 60_000 }).then((result) => {
        seenAt.set(r.workflowId, performance.timeOrigin + performance.now());
        return { r, result };
      });
      wait.catch(() => undefined); // handled by the Promise.all below, once every submit went
      waits.push(wait);
    });
    const both = await Promise.all(waits).finally(() => (load.endedAt = performance.timeOrigin + performance.now()));
    const submitted = both.map((b) => b.r);
    const results = both.map((b) => b.result);
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
  return {
    ...measured,
    ticks: s.agents * s.ticks,
    ...(await count(stack.agents.client, ids, s.ticks, { replay: true, seenAt })),
  };
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

/** Print a markdown table: its title, a blank line, the header, its rule and the rows. */
/** A Markdown table row. */
const row = (cells: unknown[]) => `| ${cells.join(' | ')} |`;

function table(title: string, header: string[], rows: string[]): void {
  console.log(`\n${title}\n`);
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${'---|'.repeat(header.length)}`);
  for (const r of rows) console.log(r);
}

async function main(): Promise<void> {
  const { scenarios, workers, ...extras } = parseArgs(process.argv.slice(2));
  // A bulk client: the burst of a run's first submits (1,000 new agents at once) keeps two cores behind
  // for longer than the default 20 s a submit waits for a worker (docs/BENCHMARKS.md).
  const started = await startBenchStack('throughput', { metrics: extras.metrics, acceptTimeoutMs: 180_000 });
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
  const shapeRows: string[] = [];
  const profRows: string[] = [];
  const workRows: string[] = [];
  const onceRows: string[] = [];
  const haltRows: string[] = [];
  const waitRows: string[] = [];
  const timelineRows: string[] = [];
  const haltFailures: string[] = [];
  const replayFailures: string[] = [];
  const seenRows: string[] = [];
  // Halts still under way when a run fails end before the stack stops.
  let pendingHalts: Promise<unknown> | undefined;
  // A worker's identity is the SDK's default, `<pid>@<host>`.
  const whose = (identity: string) => {
    const pid = Number(identity.split('@')[0]);
    const child = children.findIndex((c) => c.pid === pid);
    return pid === process.pid
      ? `this process (${identity})`
      : child >= 0
        ? `worker process ${child + 2} (${identity})`
        : identity;
  };
  let failed: unknown;
  try {
    // Unmeasured: one floor workflow and one task first. The first workflow on a fresh dev server gets
    // about half its workflow tasks dispatched in ~2 ms; every later one waits ~40 ms for each on the
    // sticky queue (docs/BENCHMARKS.md). Without this the floor measured 76 ms a tick against 100 warm.
    await floor(stack, { agents: 1, ticks: 10 }, 'warm');
    await agentShapedFloor(stack, { agents: 1, ticks: 10 }, 'warm');
    await project(stack, { agents: 1, ticks: 10 }, 'warm');
    for (const [i, s] of scenarios.entries()) {
      const name = `${s.agents}×${s.ticks}`;
      const f = await floor(stack, s, `${i}`, extras);
      process.stderr.write(`${name} floor: ${(f.wallMs / 1000).toFixed(1)} s\n`);
      const a = await agentShapedFloor(stack, s, `${i}`, extras);
      process.stderr.write(`${name} floor in the agents' shape: ${(a.wallMs / 1000).toFixed(1)} s\n`);
      const load: { endedAt?: number } = {};
      const halts = extras.haltRuns
        ? haltsUnderLoad(stack, load, { runs: extras.haltRuns, queued: extras.haltQueued })
        : undefined;
      pendingHalts = halts;
      const p = await project(stack, s, `${i}`, extras, load).finally(
        () => (load.endedAt ??= performance.timeOrigin + performance.now()),
      );
      process.stderr.write(`${name} project: ${(p.wallMs / 1000).toFixed(1)} s\n`);
      if (halts) {
        const { kept, dropped, failures } = await halts;
        haltFailures.push(...failures.map((f) => `${name}: ${f}`));
        const q = (v: number[], p: number) =>
          v.length
            ? percentile(
                [...v].sort((x, y) => x - y),
                p,
              ).toFixed(1)
            : '—';
        const stopped = kept.map((h) => h.stoppedMs);
        const cancelled = kept.map((h) => h.cancelledMs);
        const took = kept.map((h) => h.haltTaskStartedMs);
        const ran = kept.map((h) => h.haltTaskCompletedMs);
        const requested = kept.map((h) => h.cancelRequestedMs);
        const cells = [
          `${kept.length} (${dropped} sent after the load)`,
          ...[50, 95, 99, 100].map((p) => q(stopped, p)),
          ...[q(took, 50), q(took, 100), q(ran, 50), q(ran, 100)],
          ...[q(requested, 99), q(requested, 100), q(cancelled, 99), q(cancelled, 100)],
        ];
        haltRows.push(row([name, ...cells]));
        // When in the run each halt went, against how long the load's ticks waited for a worker then.
        const tw = p.execution.tickWaits;
        const from = tw.reduce((m, [at]) => Math.min(m, at), Infinity);
        const to = tw.reduce((m, [at]) => Math.max(m, at), -Infinity);
        const step = (to - from) / 10;
        for (let k = 0; k < 10; k++) {
          const lo = from + k * step;
          const hi = k === 9 ? Infinity : lo + step; // the last tenth keeps what came after the last tick
          const inWin = tw
            .filter(([at]) => at >= lo && at < hi)
            .map(([, w]) => w)
            .sort((a, b) => a - b);
          const hs = kept.filter((h) => h.sentAtMs >= lo && h.sentAtMs < hi);
          timelineRows.push(
            row([
              name,
              `${((lo - from) / 1000).toFixed(1)}–${((lo + step - from) / 1000).toFixed(1)} s`,
              inWin.length,
              q(inWin, 50),
              hs.length,
              hs.map((h) => h.haltTaskStartedMs.toFixed(0)).join(', ') || '—',
              hs.map((h) => h.stoppedMs.toFixed(0)).join(', ') || '—',
            ]),
          );
        }
      }
      const runs = [...p.execution.byIdentity].sort((a, b) => b[1].workflowTasks - a[1].workflowTasks);
      const total = (k: 'workflowTasks' | 'activities') => runs.reduce((n, [, r]) => n + r[k], 0);
      const share = (r: { workflowTasks: number; activities: number }, k: 'workflowTasks' | 'activities') =>
        `${r[k]} (${((100 * r[k]) / total(k)).toFixed(0)}%)`;
      for (const [identity, r] of runs)
        workRows.push(row([name, whose(identity), share(r, 'workflowTasks'), share(r, 'activities')]));
      const x = p.execution;
      onceRows.push(
        row([
          name,
          x.retriedActivities,
          x.failedWorkflowTasks,
          x.movedWorkflowTasks,
          x.tasksStartedTwice,
          x.ticksNotOnce,
          `${x.replayed} / ${x.replayFailures.length}`,
        ]),
      );
      replayFailures.push(...x.replayFailures.slice(0, 5).map((f) => `${name}: ${f}`));
      const lag = [...x.seenLagMs].sort((a, b) => a - b);
      const rec = [...x.recordLagMs].sort((a, b) => a - b);
      const wait = [...x.recordWaitMs].sort((a, b) => a - b);
      const pc = (v: number[], p: number) => (v.length ? percentile(v, p).toFixed(1) : '—');
      if (lag.length)
        seenRows.push(
          row([
            name,
            lag.length,
            ...[pc(rec, 50), pc(rec, 99), pc(wait, 50), pc(wait, 99), x.recordedOnNormalQueue],
            ...[pc(lag, 50), pc(lag, 99), (lag.at(-1) as number).toFixed(1)],
          ]),
        );
      for (const [kind, v] of [...f.execution.waits, ...x.waits]) {
        const sorted = [...v].sort((a, b) => a - b);
        waitRows.push(row([name, kind, v.length, pc(sorted, 50), pc(sorted, 99), pc(sorted, 100)]));
      }
      // One agent: the task's own time per tick (first activity to close), then the wall clock with the start.
      const perTick = (m: Measure) => `${(m.firstMs / s.ticks).toFixed(0)} (${(m.wallMs / m.ticks).toFixed(0)})`;
      const rate = (m: Measure) => m.ticks / (m.wallMs / 1000);
      // Where a tick's CPU goes: on this machine the server and the worker share its cores.
      const cpu = (m: Measure) => `${(m.serverCpuMs / m.ticks).toFixed(1)} | ${(m.workerCpuMs / m.ticks).toFixed(1)}`;
      const rss = (process.memoryUsage().rss / 2 ** 20).toFixed(0);
      // A run's row: its label, its time a tick (one agent), its rate and ratio to the floor, workflow
      // tasks and events a tick, the CPU a tick, and the process's RSS (the project's row only).
      const sideRow = (label: string, m: Measure, memory = '') =>
        row([
          name,
          label,
          s.agents === 1 ? perTick(m) : '—',
          rate(m).toFixed(1),
          (rate(m) / rate(f)).toFixed(2),
          (m.workflowTasks / m.ticks).toFixed(2),
          (m.events / m.ticks).toFixed(1),
          cpu(m),
          memory,
        ]);
      rows.push(sideRow('floor', f), sideRow("floor in the agents' shape", a), sideRow('project', p, rss));
      shapeRows.push(
        row([name, (rate(p) / rate(f)).toFixed(2), (rate(a) / rate(f)).toFixed(2), (rate(p) / rate(a)).toFixed(2)]),
      );
      if (f.ops && p.ops) opRows.push(...operationRows(name, f.ops, f.ticks, p.ops, p.ticks));
      if (f.profile && p.profile) profRows.push(...profileRows(name, f.profile, f.ticks, p.profile, p.ticks));
    }
  } catch (err) {
    failed = err;
    console.error('the benchmark failed:', err);
  } finally {
    await pendingHalts;
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
      '| agents × ticks | run | ms/tick, 1 agent: in the task (wall incl. start) | ticks/s | ratio to floor | ' +
        'workflow tasks/tick | events/tick | server CPU ms/tick | worker CPU ms/tick | RSS MB |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(
      `\nserver errors in its log: ${errors.total} (naming the floor's workflows ${errors.floor}, ` +
        `the project's ${errors.project}, other or none ${errors.other})`,
    );
    for (const e of errors.first) console.log(`- ${e}`);
    if (shapeRows.length)
      table(
        "the project against both floors: the agents' shape (an update-started agent, a check, a child workflow per " +
          'task, their search attributes) costs Temporal this much itself; the last column is what the project adds to it',
        [
          'agents × ticks',
          'project / floor',
          "floor in the agents' shape / floor",
          "project / floor in the agents' shape",
        ],
        shapeRows,
      );
    if (workRows.length) {
      table(
        "who ran the project's work: workflow tasks and activities completed, by the worker identity in the histories",
        ['agents × ticks', 'worker', 'workflow tasks', 'activities'],
        workRows,
      );
      table(
        'nothing ran twice (every count should be 0, the moved sticky workflow tasks aside): activities that took more than one attempt, ' +
          'workflow tasks failed or timed out while running (each re-runs), task workflows an agent started twice, ' +
          'tasks whose llm calls were not one completed a tick; and, not a re-run, the sticky workflow tasks ' +
          'no worker took within 10 s, which the server moved to the normal queue',
        [
          'agents × ticks',
          'activities retried',
          'workflow tasks failed or timed out',
          'sticky workflow tasks moved (none ran)',
          'tasks started twice',
          'tasks not one llm call a tick',
          "histories replayed / that did not replay (the workers' code)",
        ],
        onceRows,
      );
      for (const f of replayFailures) console.log(`- did not replay: ${f}`);
    }
    if (seenRows.length)
      table(
        "live state: from a task's close (the server's event time) to its agent recording the result " +
          "(the agent's workflow task that took the close, completed), and to the client's wait returning it " +
          "(`waitForTask`: the CLI's `starry run`, the API's `?wait`), every task of the run",
        [
          'agents × ticks',
          'tasks',
          'agent recorded p50 ms',
          'p99 ms',
          'its workflow task waited for a worker p50 ms',
          'p99 ms',
          'of them on the normal queue (not sticky)',
          'client saw it p50 ms',
          'p99 ms',
          'max ms',
        ],
        seenRows,
      );
    if (waitRows.length)
      table(
        "where the work waited for a worker: every workflow task's and activity's scheduled → started (the server's event times), by workflow type",
        ['agents × ticks', 'kind', 'n', 'p50 ms', 'p99 ms', 'max ms'],
        waitRows,
      );
    if (timelineRows.length)
      table(
        "the run in tenths: the load's tick workflow tasks (sticky) scheduled then, their wait for a worker, and the halts sent then",
        [
          'agents × ticks',
          'window',
          'tick workflow tasks',
          'waited p50 ms',
          'halts',
          "each halt's workflow task started ms",
          'each STOPPED ms',
        ],
        timelineRows,
      );
    if (haltRows.length) {
      table(
        "halt latency under load (--halt-runs): during each project run, bench/halt-latency.ts's halt " +
          `(an LLM call in flight, ${extras.haltQueued} queued), one after the other; ` +
          "kept when SYSTEM_HALT was sent before the run's last task ended",
        [
          'agents × ticks',
          'halts',
          'STOPPED p50 ms',
          'p95 ms',
          'p99 ms',
          'max ms',
          "halt's workflow task started p50 ms",
          'max ms',
          'completed p50 ms',
          'max ms',
          "the task's cancel requested p99 ms",
          'max ms',
          'activity cancelled p99 ms',
          'max ms',
        ],
        haltRows,
      );
      if (haltFailures.length) console.log(`\nhalts that failed: ${haltFailures.length}`);
      for (const f of haltFailures) console.log(`- ${f}`);
    }
    if (opRows.length)
      table(
        'server requests per tick, by operation (the 12 that differ most; --metrics)',
        ['agents × ticks', 'operation', 'floor', 'project'],
        opRows,
      );
    if (profRows.length)
      table(
        "the server's CPU ms per tick by function (perf samples; --profile-server): " +
          'the request handlers and queue executors that differ most, then the functions on top of the stack',
        ['agents × ticks', 'kind', 'function', 'floor', 'project'],
        profRows,
      );
  }
  // The SDK's native runtime keeps the process alive after its workers and connections are closed.
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
