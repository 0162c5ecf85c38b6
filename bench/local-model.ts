/**
 * Local model benchmark (issue 5): seconds per tick of the offline controller (`local:PATH.gguf`, run by
 * node-llama-cpp on the CPU) driving the real loop. Not a test: it prints figures for docs/BENCHMARKS.md.
 *
 * Per run: a fresh agent and workspace (`notes.md`), the goal "Read notes.md and summarise it in one
 * sentence.", the `fs.*` tools, a loop cap of `--max-ticks`. From the task workflow's history (server
 * timestamps) it measures each LLM activity (started → completed) and the task's wall time per tick.
 * The worker keeps the model loaded between calls, so the first call of the first run carries the load;
 * it is reported on its own line.
 *
 * ```sh
 * npm run build && node lib/bench/local-model.js --runs 5
 * ```
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_LOCAL_MODEL } from '../activities/llm/local';
import { parseAgentConfig } from '../core/config';
import { projectRoot } from '../dev/paths';
import { taskWorkflowId } from '../workflows/messages';
import { environmentLine, eventMs, percentile, startBenchStack } from './stack';

interface Options {
  runs: number;
  maxTicks: number;
  model: string;
}

const DEFAULT_MODEL = path.join(projectRoot(), DEFAULT_LOCAL_MODEL);

function parseArgs(argv: string[]): Options {
  const o: Options = { runs: 5, maxTicks: 8, model: DEFAULT_MODEL };
  const usage = 'usage: local-model [--runs N] [--max-ticks N] [--model PATH.gguf]';
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--model' && value) o.model = path.resolve(value);
    else if ((flag === '--runs' || flag === '--max-ticks') && Number.isInteger(Number(value)) && Number(value) >= 1) {
      o[flag === '--runs' ? 'runs' : 'maxTicks'] = Number(value);
    } else throw new RangeError(`${usage}; bad ${flag} ${value ?? ''}`);
  }
  if (!existsSync(o.model))
    throw new Error(`no model at ${o.model}: run \`npm run setup\` (it fetches SmolLM2-135M) or pass --model`);
  return o;
}

interface Run {
  outcome: string;
  reason?: string;
  ticks: number;
  tokens: number;
  /** LLM activity durations, seconds, in call order. */
  calls: number[];
  /** Task wall time per tick, seconds. */
  perTick: number;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('local');
  const runs: Run[] = [];
  try {
    for (let i = 1; i <= o.runs; i++) {
      const workspace = path.join(stack.dir, `ws-${i}`);
      mkdirSync(workspace);
      writeFileSync(
        path.join(workspace, 'notes.md'),
        '# Notes\n\nThe launch moved to Tuesday. Agents work only inside ./workspace.\n',
      );
      const config = parseAgentConfig({ workspace: [workspace], safety: { maxTicks: o.maxTicks } }, `local:${o.model}`);
      const agentId = `bench-local-${process.pid}-${i}`;
      const { taskId } = await stack.agents.submit(agentId, {
        goal: 'Read notes.md and summarise it in one sentence.',
        config,
      });
      const result = await stack.agents.waitForTask(agentId, taskId, { timeoutMs: 30 * 60_000 });
      const events =
        (await stack.agents.client.workflow.getHandle(taskWorkflowId(agentId, taskId)).fetchHistory()).events ?? [];
      const started = new Map<string, number>();
      const llmScheduled = new Set<string>();
      const calls: number[] = [];
      for (const e of events) {
        const id = String(e.eventId);
        if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'llm') llmScheduled.add(id);
        const st = e.activityTaskStartedEventAttributes;
        if (st && llmScheduled.has(String(st.scheduledEventId)))
          started.set(String(st.scheduledEventId), eventMs(e.eventTime));
        const done = e.activityTaskCompletedEventAttributes;
        const t0 = done && started.get(String(done.scheduledEventId));
        if (t0) calls.push((eventMs(e.eventTime) - t0) / 1000);
      }
      const wall = (eventMs(events.at(-1)?.eventTime) - eventMs(events[0]?.eventTime)) / 1000;
      const run: Run = {
        outcome: result.outcome,
        ticks: result.ticks,
        tokens: result.tokensUsed,
        calls,
        perTick: wall / Math.max(1, result.ticks),
      };
      if (result.reason) run.reason = result.reason.code;
      runs.push(run);
      process.stderr.write(
        `run ${i}/${o.runs}: ${run.outcome}${run.reason ? ` (${run.reason})` : ''}, ${run.ticks} ticks, ${run.tokens} tokens, ${run.perTick.toFixed(2)} s per tick\n`,
      );
    }
  } finally {
    await stack.stop();
  }

  const [load, ...rest] = runs.flatMap((r) => r.calls);
  const calls = [...rest].sort((a, b) => a - b);
  const ticks = runs.map((r) => r.perTick).sort((a, b) => a - b);
  const f = (x: number | undefined) => (x ?? NaN).toFixed(2).padStart(7);
  const line = (name: string, s: number[]) =>
    `| ${name.padEnd(40)} | ${String(s.length).padStart(5)} | ${f(percentile(s, 50))} | ${f(percentile(s, 95))} | ${f(s.at(-1))} |`;
  const mb = (statSync(o.model).size / 1e6).toFixed(0);
  const lines = [
    `Local model: ${path.basename(o.model)} (${mb} MB), ${o.runs} runs, loop cap ${o.maxTicks} ticks, fs.* tools`,
    environmentLine(),
    `outcomes: ${runs.map((r) => `${r.outcome}${r.reason ? ` (${r.reason})` : ''} after ${r.ticks}`).join(', ')}`,
    `tokens per tick: ${(
      runs.reduce((a, r) => a + r.tokens, 0) /
      Math.max(
        1,
        runs.reduce((a, r) => a + r.ticks, 0),
      )
    ).toFixed(0)}`,
    '',
    `| ${'seconds'.padEnd(40)} |     n |     p50 |     p95 |     max |`,
    `|${'-'.repeat(42)}|-------|---------|---------|---------|`,
    `| ${'first LLM call (loads the model)'.padEnd(40)} |     1 | ${f(load)} |         |         |`,
    line('each later LLM call (activity)', calls),
    line('per tick, end to end (task wall / ticks)', ticks),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
