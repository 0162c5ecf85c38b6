/**
 * Prefix share (issue 35): how much of each LLM request repeats the previous request's beginning, the
 * part a provider bills at its cached rate, per context strategy. Not a test: it prints a table for
 * docs/BENCHMARKS.md.
 *
 * A pure simulation, in seconds: the task's bookkeeping (`TaskRun`, core/task-run.ts) in store mode with
 * the real transcript store (activities/transcript.ts) over a folder, so each request is exactly the
 * message list the LLM activity would hand a provider; no Temporal server, no worker, no provider. The
 * task: 200 ticks, `contextTokens` 8,000, each tick one `fs.read` whose result is 1 KB; the model's usage
 * counts 4 bytes a token of what was sent (so the calibration settles at 4). `summarize` gets a 600-byte
 * summary per call; its calls' input counts as uncached input (a request of their own).
 *
 * Per request: the common prefix with the previous request, in bytes of the serialized tools and
 * messages, over the request's bytes; and the tokens OpenAI would bill at its cached rate (a common prefix
 * of at least 1,024 tokens, counted in 128-token steps).
 *
 * ```sh
 * npm run build && node lib/bench/prefix-share.js
 * npm run build && node lib/bench/prefix-share.js --ticks 500 --context-tokens 32000
 * ```
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { localDirStore } from '../activities/store';
import { transcriptStore } from '../activities/transcript';
import { parseAgentConfig } from '../core/config';
import type { LlmResponse } from '../core/llm';
import { initialCounters } from '../core/safety-counters';
import { TaskRun } from '../core/task-run';

const BYTES_PER_TOKEN = 4;
/** OpenAI: prompts of 1,024 tokens or more are cached, in 128-token increments. */
const CACHE_MIN = 1024;
const CACHE_STEP = 128;
const RESULT = 'x'.repeat(1000);
const SUMMARY = 'The agent read notes.md again; the file holds one line repeated. '.repeat(10).slice(0, 600);

interface Row {
  strategy: string;
  requests: number;
  /** Mean over requests 2..n of common-prefix bytes / request bytes. */
  meanShare: number;
  /** Requests whose whole predecessor is their prefix. */
  continued: number;
  inputTokens: number;
  cachedTokens: number;
  summaryCalls: number;
  summaryInputTokens: number;
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** OpenAI's cached tokens for a request whose first `prefixTokens` tokens repeat the previous one. */
function cached(prefixTokens: number): number {
  return prefixTokens < CACHE_MIN ? 0 : Math.floor(prefixTokens / CACHE_STEP) * CACHE_STEP;
}

async function simulate(strategy: string, ticks: number, contextTokens: number): Promise<Row> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'starry-prefix-share-'));
  try {
    const transcripts = transcriptStore(localDirStore(dir));
    const config = parseAgentConfig(
      {
        workspace: ['/work/space'],
        verify: false,
        contextTokens,
        contextWindow: 1000,
        safety: { maxTicks: ticks + 10, tokenBudget: 1_000_000_000 },
        context: { strategy },
      },
      'openai:gpt-4o-mini',
    );
    const run = new TaskRun(
      {
        agentId: 'bench',
        taskId: 'task-1',
        goal: 'Read notes.md again and again.',
        config,
        counters: initialCounters(),
        agentTokensUsed: 0,
      },
      'agent-bench-task-1',
      { store: true },
    );
    const row: Row = {
      strategy,
      requests: 0,
      meanShare: 0,
      continued: 0,
      inputTokens: 0,
      cachedTokens: 0,
      summaryCalls: 0,
      summaryInputTokens: 0,
    };
    let previous: string | undefined;
    let previousMessages = 0;
    let shares = 0;
    for (let tick = 1; tick <= ticks; tick++) {
      if (run.startTick({ events: 10, bytes: 1000 })) throw new Error(`the task ended at tick ${tick}`);
      const due = run.summaryDue();
      if (due) {
        const turns = await transcripts.read(due.entries);
        const inputTokens = Math.ceil(Buffer.byteLength(JSON.stringify(turns)) / BYTES_PER_TOKEN);
        const usage = { inputTokens, outputTokens: Math.ceil(SUMMARY.length / BYTES_PER_TOKEN) };
        const summary = await transcripts.keepSummary(
          { role: 'user', text: `Summary of calls ${due.covers.calls.join('–')}:\n${SUMMARY}` },
          { covers: due.covers, usage },
        );
        run.summarized({ summary, text: SUMMARY, usage });
        row.summaryCalls++;
        row.summaryInputTokens += inputTokens;
      }
      const call = run.llmCall();
      if ('end' in call) throw new Error(`the task ended at tick ${tick}: ${call.end.outcome}`);
      const { request, answer } = await transcripts.resolve(call.request);
      const wire = JSON.stringify(request.tools) + JSON.stringify(request.messages);
      const bytes = Buffer.byteLength(wire);
      const inputTokens = Math.ceil(bytes / BYTES_PER_TOKEN);
      row.requests++;
      row.inputTokens += inputTokens;
      if (previous !== undefined) {
        const prefix = commonPrefix(previous, wire);
        shares += prefix / wire.length;
        row.cachedTokens += cached(Math.floor(prefix / BYTES_PER_TOKEN));
        if (request.messages.length > previousMessages && prefix >= previous.length - 2) row.continued++;
      }
      previous = wire;
      previousMessages = request.messages.length;
      const response: LlmResponse = {
        toolCalls: [{ id: `c${tick}`, name: 'fs.read', args: { path: 'notes.md' } }],
        usage: { inputTokens, outputTokens: 20 },
      };
      const next = run.llmAnswered(await answer(response));
      if (!('calls' in next)) throw new Error(`no calls at tick ${tick}`);
      const step = run.beforeTool(next.calls[0]!, 0);
      if (!step.run) throw new Error(`the call did not run at tick ${tick}`);
      const message = await transcripts.keep({ role: 'tool', callId: `c${tick}`, name: 'fs.read', text: RESULT });
      run.afterTool(step.pending, { success: true, message });
      if (run.endTurn()) throw new Error(`the turn ended the task at tick ${tick}`);
    }
    row.meanShare = shares / Math.max(1, row.requests - 1);
    return row;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

async function main(): Promise<void> {
  const ticks = option('--ticks', 200);
  const contextTokens = option('--context-tokens', 8000);
  const cpus = os.cpus();
  console.log(
    `CPU: ${cpus[0]?.model ?? 'unknown'} × ${cpus.length} · node ${process.version} · ${os.platform()} ${os.release()}`,
  );
  console.log(
    `${ticks} ticks, contextTokens ${contextTokens}, 1 KB tool results, ${BYTES_PER_TOKEN} bytes a token; cached: OpenAI's rule (a common prefix of ≥ ${CACHE_MIN} tokens, ${CACHE_STEP}-token steps)`,
  );
  const rows: Row[] = [];
  for (const strategy of ['window', 'prefix', 'summarize']) rows.push(await simulate(strategy, ticks, contextTokens));
  console.log('');
  console.log(
    '| strategy | requests | mean prefix share | requests continuing the previous one | input tokens | billed at the cached rate | summary calls (their input tokens) |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
    console.log(
      `| ${r.strategy} | ${r.requests} | ${pct(r.meanShare)} | ${r.continued} of ${r.requests - 1} | ${r.inputTokens.toLocaleString('en-US')} | ${r.cachedTokens.toLocaleString('en-US')} (${pct(r.cachedTokens / r.inputTokens)}) | ${r.summaryCalls ? `${r.summaryCalls} (${r.summaryInputTokens.toLocaleString('en-US')})` : '—'} |`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
