/**
 * Where one warm tick's time goes (issue 17): the floor's iteration and the project's tick, step by
 * step, from the server's own event times. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * One in-memory dev server and one process with the project's worker and a floor worker of the same
 * settings, as in `bench/throughput.ts`. One floor workflow of N iterations (two no-op activities
 * each) and one task of N ticks (a scripted LLM turn that calls `fs.list`, then the tool), each after
 * an unmeasured warm-up run. Each step is the median gap between two consecutive events of the task's
 * (or the floor workflow's) history: a workflow task waiting for its worker (scheduled → started), the
 * worker processing it (started → completed: the activation, the commands, the round trip), and each
 * activity (started → completed: its dispatch to the worker, its function, its result's way back);
 * then each activity's own function, on the worker's clock (`activityTimer` in bench/stack.ts).
 *
 * ```sh
 * npm run build && node lib/bench/tick-timeline.js              # 200 ticks
 * npm run build && node lib/bench/tick-timeline.js --ticks 40
 * ```
 */
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import {
  activityTimer,
  allRunsEvents,
  environmentLine,
  eventMs,
  percentile,
  listingTask,
  startBenchStack,
  startFloorWorker,
  type BenchStack,
} from './stack';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function parseArgs(argv: string[]): { ticks: number } {
  let ticks = 200;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--ticks' && argv[i + 1]) ticks = Number(argv[++i]);
    else throw new RangeError(`usage: tick-timeline [--ticks N]; bad ${argv[i]}`);
  }
  if (!Number.isInteger(ticks) || ticks < 2) throw new RangeError(`--ticks must be a whole number >= 2, got ${ticks}`);
  return { ticks };
}

/** The steps of one iteration or tick, by the event each starts and ends with. */
const STEPS: Array<{ name: string; from: keyof HistoryEvent; to: keyof HistoryEvent; activity?: boolean }> = [
  {
    name: 'workflow task waits for the worker (scheduled → started)',
    from: 'workflowTaskScheduledEventAttributes',
    to: 'workflowTaskStartedEventAttributes',
  },
  {
    name: 'workflow task processed (started → completed)',
    from: 'workflowTaskStartedEventAttributes',
    to: 'workflowTaskCompletedEventAttributes',
  },
  {
    name: 'activity (started → completed)',
    from: 'activityTaskStartedEventAttributes',
    to: 'activityTaskCompletedEventAttributes',
    activity: true,
  },
];

/** The median of some times (nearest rank), or undefined when there are none. */
const median = (v: number[] | undefined) =>
  v?.length
    ? percentile(
        [...v].sort((a, b) => a - b),
        50,
      )
    : undefined;

/** Median ms of each step, an activity's by its type; and the whole run's ms per tick. */
function timeline(events: HistoryEvent[], ticks: number): { steps: Map<string, number>; msPerTick: number } {
  const gaps = new Map<string, number[]>();
  let activity = '';
  for (let i = 1; i < events.length; i++) {
    const [prev, next] = [events[i - 1] as HistoryEvent, events[i] as HistoryEvent];
    if (prev.activityTaskScheduledEventAttributes)
      activity = prev.activityTaskScheduledEventAttributes.activityType?.name ?? '';
    for (const s of STEPS) {
      if (!prev[s.from] || !next[s.to]) continue;
      const key = s.activity ? `${s.name}: ${activity}` : s.name;
      const gap = eventMs(next.eventTime) - eventMs(prev.eventTime);
      const seen = gaps.get(key);
      if (seen) seen.push(gap);
      else gaps.set(key, [gap]);
    }
  }
  const steps = new Map([...gaps].map(([k, v]) => [k, median(v) as number]));
  const first = events[0] as HistoryEvent;
  const last = events.at(-1) as HistoryEvent;
  return { steps, msPerTick: (eventMs(last.eventTime) - eventMs(first.eventTime)) / ticks };
}

async function floorRun(stack: BenchStack, ticks: number, id: string): Promise<HistoryEvent[]> {
  const handle = await stack.agents.client.workflow.start('floorWorkflow', {
    taskQueue: `${stack.taskQueue}-floor`,
    workflowId: id,
    args: [ticks],
  });
  await handle.result();
  return (await handle.fetchHistory()).events ?? [];
}

async function projectRun(stack: BenchStack, ticks: number, run: string): Promise<HistoryEvent[]> {
  const dir = path.join(stack.dir, run);
  const config = listingTask(dir, ticks);
  const agentId = `tl-${run}`;
  const { taskId, workflowId } = await stack.agents.submit(agentId, { goal: 'list the workspace', config });
  const result = await stack.agents.waitForTask(agentId, taskId, { timeoutMs: 30 * 60_000 });
  if (result.outcome !== 'COMPLETED' || result.ticks !== ticks)
    throw new Error(`the task did not complete in ${ticks} ticks: ${JSON.stringify(result).slice(0, 300)}`);
  return allRunsEvents(stack.agents.client, workflowId);
}

async function main(): Promise<void> {
  const { ticks } = parseArgs(process.argv.slice(2));
  const timer = activityTimer();
  const stack = await startBenchStack('tick-timeline', { activityInterceptors: [timer.interceptor] });
  const floorWorker = await startFloorWorker(stack.address, `${stack.taskQueue}-floor`, [timer.interceptor]);
  try {
    await floorRun(stack, ticks, 'tl-floor-warm');
    timer.times.clear();
    const floor = timeline(await floorRun(stack, ticks, 'tl-floor'), ticks);
    const floorOwn = new Map(timer.times);
    await projectRun(stack, ticks, 'warm');
    timer.times.clear();
    const project = timeline(await projectRun(stack, ticks, 'measured'), ticks);
    const projectOwn = new Map(timer.times);

    console.log(environmentLine());
    console.log(
      `one dev server (in memory), one process: the project worker and the floor worker (same settings); one run of ${ticks} ticks each, after a warm-up run\n`,
    );
    console.log('| step (median ms) | floor | project |');
    console.log('|---|---|---|');
    const keys = [...new Set([...floor.steps.keys(), ...project.steps.keys()])];
    const cell = (v: number | undefined) => (v === undefined ? '—' : v.toFixed(2));
    for (const k of keys) console.log(`| ${k} | ${cell(floor.steps.get(k))} | ${cell(project.steps.get(k))} |`);
    // The activities' own functions, of the types each tick runs (not the task's one listing).
    for (const type of ['noop', 'llm', 'tool'])
      console.log(
        `| its function (worker's clock: input decoded → settled): ${type} | ${cell(median(floorOwn.get(type)))} | ${cell(median(projectOwn.get(type)))} |`,
      );
    console.log(`| **the whole run, ms a tick** | ${floor.msPerTick.toFixed(2)} | ${project.msPerTick.toFixed(2)} |`);
    // Without the work the activities do themselves (every call within the task, its listing too; not the
    // agent's check before the task started): what Temporal and the workflow code cost a tick, against the
    // floor's, whose activities do nothing. A tick's calls run one after the other, so their times add up.
    const own = (times: Map<string, number[]>) =>
      [...times]
        .filter(([type]) => type !== 'checkTaskLimits')
        .flatMap(([, v]) => v)
        .reduce((a, b) => a + b, 0) / ticks;
    const floorLess = floor.msPerTick - own(floorOwn);
    const projectLess = project.msPerTick - own(projectOwn);
    console.log(
      `| the whole run less its activities' own functions (all their calls), ms a tick | ${floorLess.toFixed(2)} | ${projectLess.toFixed(2)} |`,
    );
    console.log(
      `\nthe project's tick over the floor's iteration: ${(project.msPerTick / floor.msPerTick).toFixed(2)}; ` +
        `without the activities' own work: ${(projectLess / floorLess).toFixed(2)}`,
    );
  } finally {
    await floorWorker.stop();
    await stack.stop();
  }
  // The SDK's native runtime keeps the process alive after its workers and connections are closed.
  process.exit(0);
}

main().catch((err) => {
  console.error(err instanceof RangeError ? err.message : err);
  process.exit(1);
});
