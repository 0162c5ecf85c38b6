/**
 * Approval benchmark (issue 32): how fast an approved call starts, and what a waiting call costs the
 * histories. Not a test: it prints figures for docs/BENCHMARKS.md.
 *
 * Per run: a fresh agent whose task's one tool call (`fs.list`) must be approved. Once the agent lists
 * the waiting call, the benchmark approves it and measures
 *   (a) send → the `decideApproval` update returned (the agent took the decision),
 *   (b) send → ActivityTaskStarted of the tool in the task's history (a worker runs the call).
 * Then, per approval, the events and workflow tasks of the task and the agent over the same task
 * without a rule (the difference is what asking costs). An in-memory dev server on free ports and an
 * in-process worker, started and stopped by this script.
 *
 * ```sh
 * npm run build && node lib/bench/approval-latency.js --runs 50
 * ```
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AgentClient } from '../client/agent-client';
import { parseAgentConfig, type AgentConfig } from '../core/config';
import { eventually } from '../dev/poll';
import { agentWorkflowId, taskWorkflowId } from '../workflows/messages';
import { environmentLine, eventMs, percentile, startBenchStack } from './stack';

interface Options {
  runs: number;
  warmup: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { runs: 50, warmup: 3 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const n = Number(value);
    const key = ({ '--runs': 'runs', '--warmup': 'warmup' } as const)[flag as string];
    if (!key || !Number.isInteger(n) || n < 0)
      throw new RangeError(`usage: approval-latency [--runs N] [--warmup N]; bad ${flag} ${value ?? ''}`);
    o[key] = n;
  }
  if (o.runs < 1) throw new RangeError(`--runs must be >= 1, got ${o.runs}`);
  return o;
}

const nowMs = () => performance.timeOrigin + performance.now();

interface Cost {
  events: number;
  workflowTasks: number;
}

/** Events and completed workflow tasks of a workflow's history. */
async function costOf(agents: AgentClient, workflowId: string): Promise<Cost> {
  const events = (await agents.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return {
    events: events.length,
    workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
  };
}

async function oneRun(
  agents: AgentClient,
  config: AgentConfig,
  id: string,
): Promise<{ decidedMs: number; startedMs: number; task: Cost; agent: Cost }> {
  const { taskId } = await agents.submit(id, { goal: 'list the workspace', config });
  await eventually('the waiting call', async () => (await agents.approvals(id)).approvals[0], 60_000, 5);
  const sentAt = nowMs();
  await agents.decide(id, { callId: 't1.0', decision: 'approve', by: 'approval benchmark' });
  const decidedAt = nowMs();
  await agents.waitForTask(id, taskId);
  const workflowId = taskWorkflowId(id, taskId);
  const events = (await agents.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const started = events.find((e) => e.activityTaskStartedEventAttributes && isToolStart(events, e));
  return {
    decidedMs: decidedAt - sentAt,
    startedMs: eventMs(started?.eventTime) - sentAt,
    task: await costOf(agents, workflowId),
    agent: await costOf(agents, agentWorkflowId(id)),
  };
}

type Event = NonNullable<
  Awaited<ReturnType<ReturnType<AgentClient['client']['workflow']['getHandle']>['fetchHistory']>>['events']
>[number];

/** True when a started event belongs to the tool activity. */
function isToolStart(events: Event[], started: Event): boolean {
  const scheduledId = String(started.activityTaskStartedEventAttributes?.scheduledEventId ?? '');
  const scheduled = events.find((e) => String(e.eventId) === scheduledId);
  return scheduled?.activityTaskScheduledEventAttributes?.activityType?.name === 'tool';
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('approval');
  const { agents, dir } = stack;
  const script = path.join(dir, 'turns.json');
  writeFileSync(script, JSON.stringify({ turns: [{ toolCalls: [{ name: 'fs.list', args: {} }] }, { text: 'Done.' }] }));
  const base = { workspace: [dir], verify: false };
  const asking = parseAgentConfig({ ...base, tools: { approval: { ask: ['fs.list'] } } }, `scripted:${script}`);
  const plain = parseAgentConfig(base, `scripted:${script}`);

  const samples: Awaited<ReturnType<typeof oneRun>>[] = [];
  let baseline: { task: Cost; agent: Cost };
  try {
    for (let run = 1; run <= o.warmup + o.runs; run++) {
      const sample = await oneRun(agents, asking, `approval-${process.pid}-${run}`);
      process.stderr.write(
        `${run <= o.warmup ? 'warm-up' : `run ${run - o.warmup}/${o.runs}`}: decided ${sample.decidedMs.toFixed(1)} ms, tool started ${sample.startedMs.toFixed(1)} ms\n`,
      );
      if (run > o.warmup) samples.push(sample);
    }
    const id = `approval-${process.pid}-plain`;
    await agents.waitForTask(id, (await agents.submit(id, { goal: 'list the workspace', config: plain })).taskId);
    baseline = {
      task: await costOf(agents, taskWorkflowId(id, 'task-1')),
      agent: await costOf(agents, agentWorkflowId(id)),
    };
  } finally {
    await stack.stop();
  }

  const row = (name: string, values: number[]) => {
    const s = [...values].sort((a, b) => a - b);
    const f = (x: number) => x.toFixed(1).padStart(8);
    return `| ${name.padEnd(42)} | ${f(percentile(s, 50))} | ${f(percentile(s, 99))} | ${f(s.at(-1) as number)} |`;
  };
  const last = samples.at(-1)!;
  const added = (c: Cost, b: Cost) =>
    `${c.events - b.events} events, ${c.workflowTasks - b.workflowTasks} workflow tasks`;
  const lines = [
    `Approval latency: ${o.runs} approvals (+${o.warmup} warm-up), one waiting fs.list per task`,
    environmentLine(),
    '',
    `| ${'from sending the approval to'.padEnd(42)} |  p50 ms  |  p99 ms  |  max ms  |`,
    `|${'-'.repeat(44)}|----------|----------|----------|`,
    row(
      'the decideApproval update returned',
      samples.map((s) => s.decidedMs),
    ),
    row(
      'the tool activity started (task history)',
      samples.map((s) => s.startedMs),
    ),
    '',
    `| ${'one approval adds, over the same task without a rule'.padEnd(54)} |`,
    `|${'-'.repeat(56)}|`,
    `| ${`task history: ${added(last.task, baseline.task)}`.padEnd(54)} |`,
    `| ${`agent history: ${added(last.agent, baseline.agent)}`.padEnd(54)} |`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
