/**
 * Halt latency benchmark (issue 4): how fast SYSTEM_HALT takes effect with a full inbox and an LLM call
 * in flight. Not a test: it prints figures for docs/BENCHMARKS.md.
 *
 * Per run: a fresh agent, one task whose scripted turn sleeps 30 s in the LLM activity, N queued tasks
 * behind it; once the LLM activity runs, SYSTEM_HALT is signalled and we measure
 *   (a) send → the agent's `state` query shows STOPPED (polled every `--poll` ms),
 *   (b) send → the task workflow's history records ActivityTaskCancelRequested (the cancel reached the task),
 *   (c) send → ActivityTaskCanceled, i.e. the activity saw the cancellation and acknowledged it
 *       (WAIT_CANCELLATION_COMPLETED puts the acknowledgement in history; its time is the server's).
 * Everything runs on this machine: an in-memory `temporal server start-dev` on free ports and an
 * in-process worker, both started and stopped by this script.
 *
 * ```sh
 * npm run build && node lib/bench/halt-latency.js --runs 30
 * ```
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { AgentClient } from '../client/agent-client';
import { parseAgentConfig } from '../core/config';
import { agentStateQuery, agentWorkflowId, haltSignal, taskWorkflowId } from '../workflows/messages';
import { eventually, until } from '../dev/poll';
import { environmentLine, eventMs, percentile, pool, startBenchStack } from './stack';

export interface Options {
  runs: number;
  queued: number;
  pollMs: number;
  warmup: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { runs: 30, queued: 100, pollMs: 5, warmup: 2 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const n = Number(value);
    const key = ({ '--runs': 'runs', '--queued': 'queued', '--poll': 'pollMs', '--warmup': 'warmup' } as const)[
      flag as string
    ];
    if (!key || !Number.isInteger(n) || n < 0)
      throw new RangeError(
        `usage: halt-latency [--runs N] [--queued N] [--poll MS] [--warmup N]; bad ${flag} ${value ?? ''}`,
      );
    o[key] = n;
    i++;
  }
  if (o.runs < 1) throw new RangeError(`--runs must be >= 1, got ${o.runs}`);
  return o;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Wall-clock milliseconds with sub-millisecond precision, comparable to the server's event times. */
const nowMs = () => performance.timeOrigin + performance.now();

/** The LLM activity of the task is running (picked up by the worker), not just scheduled. */
async function llmRunning(client: Client, workflowId: string): Promise<boolean> {
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return (d.raw.pendingActivities ?? []).some((p) => p.activityType?.name === 'llm' && p.state === 2 /* STARTED */);
  } catch {
    return false;
  }
}

export interface Sample {
  /** When SYSTEM_HALT was sent (wall clock, ms). */
  sentAtMs: number;
  signalMs: number;
  stoppedMs: number;
  cancelRequestedMs: number;
  cancelledMs: number;
  queueMs: number;
  /** Sent → the signal in the agent's history, and the workflow task that took it scheduled (the server's times). */
  signaledMs: number;
  haltTaskScheduledMs: number;
  /** Sent → the agent's workflow task that handled the halt started (a worker took it) and completed: where a slow halt waited. */
  haltTaskStartedMs: number;
  haltTaskCompletedMs: number;
}

/**
 * One halt: a fresh agent with a slow LLM turn in flight (`slowTurnConfig`) and `o.queued` tasks behind it, SYSTEM_HALT,
 * and the times to STOPPED and to the activity's cancellation (also run under load by bench/throughput.ts).
 *
 * ```ts
 * const sample = await oneRun(stack.agents, slowTurnConfig(stack.dir), 1, { queued: 100, pollMs: 5 });
 * ```
 */
export async function oneRun(
  agents: AgentClient,
  config: ReturnType<typeof parseAgentConfig>,
  run: number,
  o: Pick<Options, 'queued' | 'pollMs'> & { queueAtOnce?: boolean },
): Promise<Sample> {
  const client = agents.client;
  const agentId = `bench-${process.pid}-${Date.now().toString(36)}-${run}`;
  const { taskId } = await agents.submit(agentId, { goal: 'a slow LLM turn', config });
  const taskWf = taskWorkflowId(agentId, taskId);
  await until('the LLM activity to run', () => llmRunning(client, taskWf), 60_000, 10);

  const q0 = performance.now();
  // One after the other: concurrent updates to one workflow contend for its workflow task and are slower.
  // Under load (`queueAtOnce`) each would wait its turn behind the load's workflow tasks, and 100 of them
  // outlast the run: 10 at once (the server's in-flight updates a workflow) share the agent's workflow tasks.
  await pool(
    Array.from({ length: o.queued }, (_, i) => i + 1),
    o.queueAtOnce ? 10 : 1,
    async (i) => void (await agents.submit(agentId, { goal: `queued ${i}`, config, taskId: `task-q${i}` })),
  );
  const queueMs = performance.now() - q0;
  const agent = client.workflow.getHandle(agentWorkflowId(agentId));
  const before = await agent.query(agentStateQuery);
  if (before.queue.length !== o.queued || before.currentTask?.taskId !== taskId)
    throw new Error(`run ${run}: expected ${o.queued} queued tasks behind ${taskId}`);
  // Let the queue's workflow tasks settle so the halt is measured alone.
  await sleep(200);

  const { runId } = await agent.describe();
  const sentAt = nowMs();
  // As the CLI and the API halt: the agent raised to the halt's queue priority, the signal, then its running task raised.
  await agents.halt(agentId, { by: 'halt-latency benchmark' });
  const signalledAt = nowMs();
  const stoppedAt = await eventually(
    'STOPPED',
    async () => {
      const s = await agent.query(agentStateQuery);
      return s.agentState === 'STOPPED' && s.queue.length === 0 ? nowMs() : undefined;
    },
    60_000,
    o.pollMs,
  );

  const events = await eventually(
    'ActivityTaskCanceled in the task history',
    async () => {
      const h = await client.workflow.getHandle(taskWf).fetchHistory();
      const ev = h.events ?? [];
      return ev.some((e) => e.activityTaskCanceledEventAttributes) ? ev : undefined;
    },
    60_000,
    20,
  );
  if (events.some((e) => e.activityTaskCompletedEventAttributes))
    throw new Error(`run ${run}: the LLM activity completed instead of being cancelled`);
  // The run that took the halt: a halted agent may continue as new before this reads it.
  const handled = haltTaskOf(
    (await client.workflow.getHandle(agentWorkflowId(agentId), runId).fetchHistory()).events ?? [],
  );
  const requested = events.find((e) => e.activityTaskCancelRequestedEventAttributes);
  const cancelled = events.find((e) => e.activityTaskCanceledEventAttributes);
  const s = await agent.query(agentStateQuery);
  if (s.cancelledTasks.length !== o.queued)
    throw new Error(`run ${run}: ${s.cancelledTasks.length} cancelled tasks recorded, expected ${o.queued}`);
  return {
    sentAtMs: sentAt,
    signalMs: signalledAt - sentAt,
    stoppedMs: stoppedAt - sentAt,
    cancelRequestedMs: eventMs(requested?.eventTime) - sentAt,
    cancelledMs: eventMs(cancelled?.eventTime) - sentAt,
    queueMs,
    signaledMs: eventMs(handled.signaled.eventTime) - sentAt,
    haltTaskScheduledMs: eventMs(handled.scheduled.eventTime) - sentAt,
    haltTaskStartedMs: eventMs(handled.started.eventTime) - sentAt,
    haltTaskCompletedMs: eventMs(handled.completed.eventTime) - sentAt,
  };
}

/** The agent's workflow task that took the SYSTEM_HALT signal: the first one started after the signal arrived. */
function haltTaskOf(events: temporal.api.history.v1.IHistoryEvent[]) {
  const at = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === haltSignal.name);
  const after = events.slice(at + 1);
  const started = after.find((e) => e.workflowTaskStartedEventAttributes);
  const completed = after.find((e) => e.workflowTaskCompletedEventAttributes);
  if (at < 0 || !started || !completed) throw new Error('no workflow task took SYSTEM_HALT in the agent history');
  const scheduledId = String(started.workflowTaskStartedEventAttributes?.scheduledEventId);
  const scheduled = events.find((e) => String(e.eventId) === scheduledId);
  if (!scheduled) throw new Error('no scheduled event for the workflow task that took SYSTEM_HALT');
  return { signaled: events[at]!, scheduled, started, completed };
}

/**
 * The halted task's config, in `dir`: a scripted LLM turn that sleeps `delayMs` (default 30 s: the
 * call in flight while the tasks queue behind it), then one that answers.
 *
 * ```ts
 * const config = slowTurnConfig(stack.dir);
 * ```
 */
export function slowTurnConfig(dir: string, delayMs = 30_000): ReturnType<typeof parseAgentConfig> {
  const script = path.join(dir, 'halt-turns.json');
  writeFileSync(
    script,
    JSON.stringify({
      turns: [{ delayMs, text: 'slow turn', toolCalls: [{ name: 'fs.list', args: {} }] }, { text: 'Done.' }],
    }),
  );
  return parseAgentConfig({ workspace: [dir] }, `scripted:${script}`);
}

function row(name: string, values: number[]): string {
  const s = [...values].sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(1).padStart(8);
  return `| ${name.padEnd(44)} | ${f(percentile(s, 50))} | ${f(percentile(s, 95))} | ${f(percentile(s, 99))} | ${f(s.at(-1) as number)} |`;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('halt');
  const { agents, dir: stateDir } = stack;

  const config = slowTurnConfig(stateDir);

  const samples: Sample[] = [];
  try {
    for (let run = 1; run <= o.warmup + o.runs; run++) {
      const sample = await oneRun(agents, config, run, o);
      const label = run <= o.warmup ? 'warm-up' : `run ${run - o.warmup}/${o.runs}`;
      process.stderr.write(
        `${label}: signal ${sample.signalMs.toFixed(1)} ms, STOPPED ${sample.stoppedMs.toFixed(1)} ms, ` +
          `cancel requested ${sample.cancelRequestedMs.toFixed(1)} ms, activity cancelled ${sample.cancelledMs.toFixed(1)} ms ` +
          `(queued ${o.queued} in ${sample.queueMs.toFixed(0)} ms)\n`,
      );
      if (run > o.warmup) samples.push(sample);
    }
  } finally {
    await stack.stop();
  }

  const lines = [
    `Halt latency: ${o.runs} runs (+${o.warmup} warm-up), ${o.queued} queued tasks, an LLM call in flight, state polled every ${o.pollMs} ms`,
    environmentLine(),
    '',
    `| ${'from sending SYSTEM_HALT to'.padEnd(44)} |  p50 ms  |  p95 ms  |  p99 ms  |  max ms  |`,
    `|${'-'.repeat(46)}|----------|----------|----------|----------|`,
    row(
      'halt() returned (signal sent, task raised)',
      samples.map((s) => s.signalMs),
    ),
    row(
      'state query shows STOPPED, inbox empty',
      samples.map((s) => s.stoppedMs),
    ),
    row(
      'ActivityTaskCancelRequested (task history)',
      samples.map((s) => s.cancelRequestedMs),
    ),
    row(
      'ActivityTaskCanceled (activity acknowledged)',
      samples.map((s) => s.cancelledMs),
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

// Imported by bench/throughput.ts for its halts under load: run only as a script.
if (require.main === module)
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
