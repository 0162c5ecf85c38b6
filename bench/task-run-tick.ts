/**
 * TaskRun's bookkeeping per tick (issue 54): the CPU one tick of the task's books costs the workflow,
 * every step the task workflow calls on `TaskRun` (core/task-run.ts) and nothing else: no Temporal
 * server, no worker, no activity. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * Each tick: `startTick`, `summaryDue`, `llmCall`, `inputEstimate`, `llmAnswered` (one `fs.read` call),
 * `askApprovals`, `beforeTool`, `afterTool`, `endTurn`, the reports the workflow writes (`details`,
 * `reported`, `progressDue`/`progress`, `status`) and the drains of the telemetry buffer. Three tasks:
 * as the workflow runs them (the transcript in the store, the worker's tools listed), the same with every
 * other call failing (pain: the guide's text, the breakers' counters), and without the store (each call
 * carries its 40-message window inline, as the pure tests run it).
 *
 * ```sh
 * npm run build && node lib/bench/task-run-tick.js
 * # options: --ticks N (default 2000), --runs N (default 15)
 * ```
 */
import { parseAgentConfig } from '../core/config';
import { failure, normalizedError } from '../core/errors';
import type { LlmResponse } from '../core/llm';
import { initialCounters } from '../core/safety-counters';
import { TaskRun } from '../core/task-run';
import { toolSpecs } from '../core/tools';
import { environmentLine } from './stack';

interface Scenario {
  name: string;
  store: boolean;
  /** Every other call fails with EPERM. */
  failing: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: 'store, tools listed (the workflow)', store: true, failing: false },
  { name: 'store, every other call failing', store: true, failing: true },
  { name: 'inline, a 40-message window', store: false, failing: false },
];
const EPERM = normalizedError({ code: 'EPERM', message: 'outside the workspace', source: 'fs.read' });

/** Milliseconds `ticks` ticks of one task take. */
function run(scenario: Scenario, ticks: number): number {
  const config = parseAgentConfig(
    { workspace: ['/work/space'], safety: { maxTicks: ticks + 10, tokenBudget: 1_000_000_000 } },
    'openai:gpt-4o-mini',
  );
  const input = { agentId: 'bench', taskId: 'task-1', goal: 'Read the notes.', config, counters: initialCounters() };
  const task = new TaskRun({ ...input, agentTokensUsed: 0 }, 'agent-bench-task-1', { store: scenario.store });
  if (scenario.store) task.offer(toolSpecs());
  const started = performance.now();
  for (let tick = 1; tick <= ticks; tick++) {
    if (task.startTick({ events: 10, bytes: 1000 })) throw new Error(`the task ended at tick ${tick}`);
    task.summaryDue();
    const call = task.llmCall();
    if ('end' in call) throw new Error(`the task ended at tick ${tick}: ${call.end.outcome}`);
    task.inputEstimate();
    const response: LlmResponse = {
      toolCalls: [{ id: `c${tick}`, name: 'fs.read', args: { path: `notes-${tick}.md` } }],
      usage: { inputTokens: 2000, outputTokens: 20 },
      ...(scenario.store
        ? {
            message: { role: 'assistant', ref: `answer-${tick}`, bytes: 300 },
            context: { ref: `manifest-${tick}`, sentBytes: 8000 },
          }
        : {}),
    };
    const next = task.llmAnswered(response);
    if (!('calls' in next)) throw new Error(`no calls at tick ${tick}`);
    task.askApprovals(next.calls, tick);
    const step = task.beforeTool(next.calls[0]!, 0);
    if (!step.run) throw new Error(`the call did not run at tick ${tick}`);
    if (scenario.failing && tick % 2 === 0) task.afterTool(step.pending, failure(EPERM));
    else if (scenario.store)
      task.afterTool(step.pending, { success: true, message: { role: 'tool', ref: `result-${tick}`, bytes: 1000 } });
    else task.afterTool(step.pending, { success: true, data: 'x'.repeat(1000) });
    if (task.endTurn()) throw new Error(`the turn ended the task at tick ${tick}`);
    task.details('EXECUTING');
    task.reported('EXECUTING');
    if (task.progressDue()) task.progress();
    task.status();
    task.drainEvents();
    task.drainCounts();
  }
  return performance.now() - started;
}

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

function main(): void {
  const ticks = option('--ticks', 2000);
  const runs = option('--runs', 15);
  console.log(environmentLine());
  console.log(`${ticks} ticks a run, ${runs} runs a task (after one warm-up run)`);
  console.log('');
  console.log('| task | µs a tick, median run | fastest run |');
  console.log('|---|---|---|');
  for (const scenario of SCENARIOS) {
    run(scenario, ticks);
    const times = Array.from({ length: runs }, () => run(scenario, ticks)).sort((a, b) => a - b);
    const perTick = (ms: number) => ((ms / ticks) * 1000).toFixed(1);
    console.log(`| ${scenario.name} | ${perTick(times[Math.floor(runs / 2)]!)} | ${perTick(times[0]!)} |`);
  }
}

main();
