/**
 * History growth (issue 13): how many bytes a task's Temporal history takes per tick, and how much of
 * it is the `llm` activity's input (the assembled context, sent again at every tick). Not a test: it
 * prints a table for docs/BENCHMARKS.md.
 *
 * One in-memory dev server and an in-process worker (`bench/stack.ts`), the worker's content store in a
 * fresh folder (`STARRY_STORE_DIR`). Per scenario: a fresh agent with the default config (the loop cap
 * raised when the scenario needs more ticks) and a workspace holding one file; a scripted controller
 * whose every turn calls `fs.read` on that file, then a final answer, then the verification tick (on by
 * default, counted). Each turn states a small usage, so the default token budget never trips. After the
 * task closes, every run of its workflow (a task that continued-as-new has several) is measured:
 * events and bytes from `describe()`, the `llm` inputs by paging through the history 50 events at a
 * time, fewer when a page is too large (a whole 16 MB history would not pass the client's 4 MB gRPC
 * limit). `--context-window N` changes the agents' window (issue 13's 2 KB rows match N = 1000).
 *
 * ```sh
 * npm run build && node lib/bench/history.js               # 10/25/50 ticks with a 2 KB file, 50 with 60 KB
 * npm run build && node lib/bench/history.js --long 2000   # plus a 2,000-tick task (loop cap raised)
 * npm run build && node lib/bench/history.js --context-window 1000
 * ```
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { agentConfigSchema, parseAgentConfig, type AgentConfig } from '../core/config';
import { environmentLine, startBenchStack, type BenchStack } from './stack';

interface Scenario {
  name: string;
  ticks: number;
  fileBytes: number;
  /** The loop cap to ask for; default: the config's default. */
  maxTicks?: number;
}

const KB = 1024;
const MB = 1024 * 1024;
/** Every turn's stated usage: 2,000 ticks × 25 tokens stay far below the default budget of 100,000. */
const USAGE = { inputTokens: 20, outputTokens: 5 };
const PAGE_SIZE = 50;

interface Options {
  /** Ticks of the optional long task. */
  long?: number;
  /** The agents' `contextWindow`; default the config's. */
  window?: number;
}

function parseArgs(argv: string[]): Options {
  const usage = 'usage: history [--long TICKS (>= 3)] [--context-window MESSAGES]';
  const o: Options = {};
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const n = Number(value);
    if (flag === '--long' && Number.isInteger(n) && n >= 3) o.long = n;
    else if (flag === '--context-window' && Number.isInteger(n) && n >= 1) o.window = n;
    else throw new RangeError(`${usage}; bad ${flag} ${value ?? ''}`);
  }
  return o;
}

function scenarios(long: number | undefined): Scenario[] {
  const list: Scenario[] = [
    { name: '10 ticks, 2 KB file', ticks: 10, fileBytes: 2 * KB },
    { name: '25 ticks, 2 KB file', ticks: 25, fileBytes: 2 * KB },
    { name: '50 ticks, 2 KB file', ticks: 50, fileBytes: 2 * KB },
    { name: '50 ticks, 60 KB file', ticks: 50, fileBytes: 60 * KB },
  ];
  if (long !== undefined)
    list.push({ name: `long: ${long} ticks, 2 KB file`, ticks: long, fileBytes: 2 * KB, maxTicks: long });
  return list;
}

/**
 * Text of exactly `bytes` ASCII bytes, different for every scenario (so a content store shares nothing across them).
 */
function fileText(bytes: number, seed: string): string {
  let text = '';
  for (let line = 1; text.length < bytes; line++)
    text += `${seed} line ${String(line).padStart(4, '0')}: "the quick brown fox" jumps over the lazy dog\n`;
  return text.slice(0, bytes);
}

/** Bytes of the files under `dir` (0 when it does not exist). */
function dirBytes(dir: string): number {
  let total = 0;
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of entries) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    total += st.isDirectory() ? dirBytes(p) : st.isFile() ? st.size : 0;
  }
  return total;
}

interface HistoryFigures {
  runs: number;
  events: number;
  bytes: number;
  llmInputBytes: number;
  largestLlmInput: number;
}

/** gRPC's RESOURCE_EXHAUSTED: the answer was larger than the client's 4 MB receive limit. */
const RESOURCE_EXHAUSTED = 8;

/**
 * One run's `llm` activity inputs (payload data bytes), paging through its history, and the run it
 * continued from (empty for the first run). A page too large for the client is asked again with half
 * as many events.
 */
async function llmInputs(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<{ total: number; largest: number; previousRunId: string }> {
  let total = 0;
  let largest = 0;
  let previousRunId = '';
  let pageSize = PAGE_SIZE;
  let nextPageToken: Uint8Array | undefined;
  do {
    let page;
    try {
      page = await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId, runId },
        maximumPageSize: pageSize,
        skipArchival: true,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
    } catch (err) {
      if ((err as { code?: number }).code !== RESOURCE_EXHAUSTED || pageSize === 1) throw err;
      pageSize = Math.ceil(pageSize / 2);
      continue;
    }
    for (const e of page.history?.events ?? []) {
      const started = e.workflowExecutionStartedEventAttributes;
      if (started?.continuedExecutionRunId) previousRunId = started.continuedExecutionRunId;
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name !== 'llm') continue;
      const bytes = (scheduled.input?.payloads ?? []).reduce((n, p) => n + (p.data?.length ?? 0), 0);
      total += bytes;
      largest = Math.max(largest, bytes);
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { total, largest, previousRunId };
}

/** Every run of the task's workflow, newest first, following `continuedExecutionRunId` back to the first. */
async function measureHistory(client: Client, workflowId: string): Promise<HistoryFigures> {
  const f: HistoryFigures = { runs: 0, events: 0, bytes: 0, llmInputBytes: 0, largestLlmInput: 0 };
  let runId: string = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const d = await client.workflow.getHandle(workflowId, runId).describe();
    const inputs = await llmInputs(client, workflowId, runId);
    f.runs++;
    f.events += d.historyLength;
    f.bytes += d.historySize ?? 0;
    f.llmInputBytes += inputs.total;
    f.largestLlmInput = Math.max(f.largestLlmInput, inputs.largest);
    runId = inputs.previousRunId;
  }
  return f;
}

/** A row of the table: the figures, or why the scenario has none. */
type Row =
  | { scenario: Scenario; figures: HistoryFigures; ticks: number; wallMs: number; storeBytes: number; outcome: string }
  | { scenario: Scenario; refused: string }
  | { scenario: Scenario; failed: string };

const oneLine = (err: unknown) =>
  (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*(- )?/g, ' ').trim();

async function runScenario(
  stack: BenchStack,
  s: Scenario,
  index: number,
  o: Options & { storeDir: string },
): Promise<Row> {
  const dir = path.join(stack.dir, `s${index}`);
  mkdirSync(path.join(dir, 'ws'), { recursive: true });
  writeFileSync(path.join(dir, 'ws', 'data.txt'), fileText(s.fileBytes, `scenario ${index}`));
  // Reads, the final answer, then the verification tick (the script stands by its answer).
  const read = { toolCalls: [{ name: 'fs.read', args: { path: 'data.txt' } }], usage: USAGE };
  const script = path.join(dir, 'turns.json');
  writeFileSync(
    script,
    JSON.stringify({
      turns: [...Array.from({ length: s.ticks - 2 }, () => read), { text: 'Done: data.txt read.', usage: USAGE }],
    }),
  );
  const agentId = `hist-${process.pid}-${index}`;
  let config: AgentConfig;
  let submitted: { taskId: string; workflowId: string };
  const storeBefore = dirBytes(o.storeDir);
  const t0 = performance.now();
  try {
    const raw = {
      workspace: [path.join(dir, 'ws')],
      ...(o.window ? { contextWindow: o.window } : {}),
      ...(s.maxTicks ? { safety: { maxTicks: s.maxTicks } } : {}),
    };
    config = parseAgentConfig(raw, `scripted:${script}`);
    submitted = await stack.agents.submit(agentId, {
      goal: 'Read data.txt again and again, then say you are done.',
      config,
    });
  } catch (err) {
    return { scenario: s, refused: oneLine(err) };
  }
  let step = 'waiting for the task';
  try {
    const result = await stack.agents.waitForTask(agentId, submitted.taskId, { timeoutMs: 6 * 60 * 60_000 });
    const wallMs = performance.now() - t0;
    step = 'measuring its history';
    const figures = await measureHistory(stack.agents.client, submitted.workflowId);
    const outcome = `${result.outcome}${result.reason ? ` (${result.reason.code})` : ''}`;
    return {
      scenario: s,
      figures,
      ticks: result.ticks,
      wallMs,
      storeBytes: dirBytes(o.storeDir) - storeBefore,
      outcome,
    };
  } catch (err) {
    return { scenario: s, failed: `${step}: ${oneLine(err)}` };
  }
}

function formatRow(r: Row): string {
  const line = (cells: unknown[]) => `| ${cells.join(' | ')} |`;
  if ('refused' in r) return line([r.scenario.name, `refused: ${r.refused}`, ...Array(8).fill('')]);
  if ('failed' in r) return line([r.scenario.name, `failed: ${r.failed}`, ...Array(8).fill('')]);
  const { figures: f, ticks } = r;
  const share = f.bytes ? `${((100 * f.llmInputBytes) / f.bytes).toFixed(0)}%` : '—';
  const store = r.storeBytes ? `${(r.storeBytes / KB).toFixed(0)} KB` : '—';
  return line([
    r.scenario.name,
    f.events,
    (f.bytes / MB).toFixed(2),
    `${(f.bytes / ticks / KB).toFixed(f.bytes / ticks < 10 * KB ? 1 : 0)} KB`,
    share,
    (f.largestLlmInput / KB).toFixed(0),
    store,
    (ticks / (r.wallMs / 1000)).toFixed(1),
    f.runs,
    `${r.outcome} after ${ticks} ticks`,
  ]);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  // The worker's content-addressed store, when it has one: a fresh folder, measured per scenario.
  const storeDir = mkdtempSync(path.join(os.tmpdir(), 'starry-bench-store-'));
  process.env.STARRY_STORE_DIR = storeDir;
  const started = performance.now();
  const stack = await startBenchStack('history');
  const rows: Row[] = [];
  try {
    for (const [i, s] of scenarios(o.long).entries()) {
      const row = await runScenario(stack, s, i, { ...o, storeDir });
      rows.push(row);
      process.stderr.write(`${s.name}: ${'wallMs' in row ? `${(row.wallMs / 1000).toFixed(1)} s` : formatRow(row)}\n`);
    }
  } finally {
    await stack.stop();
  }
  console.log(environmentLine());
  console.log(
    `one dev server (in memory), an in-process worker; per task a scripted controller reads the file at every tick, then answers (+ the verification tick); default config${o.window ? ` but contextWindow ${o.window}` : ` (contextWindow ${agentConfigSchema().parse({}).contextWindow})`}, loop cap raised only for the long run`,
  );
  console.log(
    `MB = 2^20 bytes, KB = 2^10; llm share = payload data bytes of the \`llm\` ActivityTaskScheduled inputs / the history's size; store = bytes written under STARRY_STORE_DIR during the task\n`,
  );
  console.log(
    '| scenario | events | history MB | per tick | llm inputs share | largest llm input KB | store | ticks/s | task runs | outcome |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(formatRow(r));
  console.log(
    `\nstore total: ${dirBytes(storeDir)} bytes in ${storeDir}; bench wall time ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  // The SDK's native runtime keeps the process alive after its workers and connections are closed.
  process.exit(rows.some((r) => 'failed' in r) ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
