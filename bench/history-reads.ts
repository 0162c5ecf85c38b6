/**
 * Reading a finished task back (issue 52): what `starry logs <workflowId>` asks of Temporal, and how long
 * it takes, for a long task of small ticks and a short task of large ones. Not a test: it prints a table
 * for docs/BENCHMARKS.md.
 *
 * One in-memory dev server and an in-process worker (`bench/stack.ts`). Per scenario, one task runs to its
 * end, then `starry logs`' reads run `--runs` times in this process, as the command makes them: the task's
 * result (`AgentClient.taskResult`) and its events printed from the history (`printTask`, to nowhere),
 * on a connection of their own whose calls are counted by method, with the largest history answer's size.
 * The script uses only what the code before issue 52 had, so the same file runs on both (see
 * docs/BENCHMARKS.md).
 *
 * ```sh
 * npm run build && node lib/bench/history-reads.js                 # 2,000 ticks of fs.list; 45 answers of 200 KB
 * npm run build && node lib/bench/history-reads.js --ticks 300 --runs 3
 * ```
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { AgentClient } from '../client/agent-client';
import { printTask } from '../cli/live';
import { parseAgentConfig, type AgentConfig } from '../core/config';
import { environmentLine, listingTask, percentile, startBenchStack, type BenchStack } from './stack';

interface Options {
  ticks: number;
  runs: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { ticks: 2000, runs: 5 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], Number(argv[i + 1])];
    if (flag === '--ticks' && Number.isInteger(value) && value >= 3) o.ticks = value;
    else if (flag === '--runs' && Number.isInteger(value) && value >= 1) o.runs = value;
    else
      throw new RangeError(
        `usage: history-reads [--ticks N (>= 3)] [--runs N (>= 1)]; bad ${flag} ${argv[i + 1] ?? ''}`,
      );
  }
  return o;
}

/** A scripted task of `answers` answers of `kb` KB of text, each with a listing, then a final one. */
function largeTask(dir: string, answers: number, kb: number): AgentConfig {
  mkdirSync(path.join(dir, 'ws'), { recursive: true });
  const usage = { inputTokens: 100, outputTokens: 10 };
  const turn = (i: number) => ({
    text: `answer ${i} ${'x'.repeat(kb * 1024)}`,
    toolCalls: [{ name: 'fs.list', args: {} }],
    usage,
  });
  const script = path.join(dir, 'large.json');
  writeFileSync(
    script,
    JSON.stringify({ turns: [...Array.from({ length: answers }, (_, i) => turn(i + 1)), { text: 'Done.', usage }] }),
  );
  return parseAgentConfig(
    { workspace: [path.join(dir, 'ws')], verify: false, safety: { maxTicks: answers + 5 } },
    `scripted:${script}`,
  );
}

const COUNTED = [
  'getWorkflowExecutionHistory',
  'getWorkflowExecutionHistoryReverse',
  'describeWorkflowExecution',
  'queryWorkflow',
] as const;
type Method = (typeof COUNTED)[number];

/** A client of its own whose calls are counted, and the largest history answer it got. */
async function countedClient(stack: BenchStack) {
  const connection = await Connection.connect({ address: stack.address });
  const agents = new AgentClient({ connection, taskQueue: stack.taskQueue });
  const calls = new Map<Method, number>();
  let largest = 0;
  const service = connection.workflowService as unknown as Record<Method, (...a: unknown[]) => Promise<unknown>>;
  for (const m of COUNTED) {
    const original = service[m].bind(service);
    service[m] = async (...args: unknown[]) => {
      calls.set(m, (calls.get(m) ?? 0) + 1);
      const res = await original(...args);
      if (m.startsWith('getWorkflowExecutionHistory'))
        largest = Math.max(
          largest,
          temporal.api.workflowservice.v1.GetWorkflowExecutionHistoryResponse.encode(
            res as temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse,
          ).finish().length,
        );
      return res;
    };
  }
  return {
    agents,
    reset: () => {
      calls.clear();
      largest = 0;
    },
    seen: () => ({ calls: new Map(calls), largest }),
    close: () => connection.close(),
  };
}

interface Row {
  scenario: string;
  ticks: number;
  runs: number;
  historyMB: number;
  /** One read's figures (the last), and every read's time. */
  times: number[];
  calls?: Map<Method, number>;
  largest?: number;
  lines?: number;
  failed?: string;
}

/** Run the task, then read it back `runs` times as `starry logs` does. */
async function scenario(stack: BenchStack, name: string, config: AgentConfig, runs: number): Promise<Row> {
  const agentId = `reads-${process.pid}-${name.replace(/\W+/g, '-')}`;
  const { taskId, workflowId } = await stack.agents.submit(agentId, { goal: 'Work, then say you are done.', config });
  const result = await stack.agents.waitForTask(agentId, taskId, { timeoutMs: 6 * 60 * 60_000 });
  const historyMB = (await historyBytes(stack, workflowId)) / 2 ** 20;
  const row: Row = { scenario: name, ticks: result.ticks, runs: 0, historyMB, times: [] };
  const reader = await countedClient(stack);
  try {
    for (let i = 0; i < runs; i++) {
      reader.reset();
      let lines = 0;
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          lines += chunk.toString().split('\n').length - 1;
          done();
        },
      });
      const t0 = performance.now();
      try {
        await reader.agents.taskResult(workflowId);
        await printTask(reader.agents.client, workflowId, { live: false, out: sink });
      } catch (err) {
        row.failed = `after ${((performance.now() - t0) / 1000).toFixed(1)} s: ${(err as Error).message.split('\n')[0]}`;
        return row;
      }
      row.times.push(performance.now() - t0);
      row.runs++;
      Object.assign(row, reader.seen(), { lines });
    }
    return row;
  } finally {
    await reader.close();
  }
}

/** The task's history over all its runs, from their descriptions. */
async function historyBytes(stack: BenchStack, workflowId: string): Promise<number> {
  let total = 0;
  const client = stack.agents.client;
  for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` }))
    total += Number(
      (await client.workflow.getHandle(workflowId, run.runId).describe()).raw.workflowExecutionInfo?.historySizeBytes ??
        0,
    );
  return total;
}

function formatRow(r: Row): string {
  const calls = (m: Method) => r.calls?.get(m) ?? 0;
  const cells = r.failed
    ? [r.scenario, r.ticks, r.historyMB.toFixed(1), `failed ${r.failed}`, '', '', '', '', '']
    : [
        r.scenario,
        r.ticks,
        r.historyMB.toFixed(1),
        (
          percentile(
            [...r.times].sort((a, b) => a - b),
            50,
          ) / 1000
        ).toFixed(2),
        COUNTED.reduce((n, m) => n + calls(m), 0),
        calls('getWorkflowExecutionHistory'),
        `${calls('describeWorkflowExecution')} / ${calls('getWorkflowExecutionHistoryReverse')} / ${calls('queryWorkflow')}`,
        ((r.largest ?? 0) / 2 ** 20).toFixed(2),
        r.lines ?? 0,
      ];
  return `| ${cells.join(' | ')} |`;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  // The tasks' workspaces in a folder of their own: the worker refuses roots holding its store or journal.
  const roots = (process.env.STARRY_WORKSPACE_ROOTS ??= mkdtempSync(path.join(os.tmpdir(), 'starry-bench-roots-')));
  const stack = await startBenchStack('history-reads');
  const rows: Row[] = [];
  try {
    const listing = listingTask(path.join(roots, 'long'), o.ticks);
    // 110 tokens a tick: the default budget of 100,000 would stop it at about 900 ticks.
    const long = { ...listing, safety: { ...listing.safety, tokenBudget: o.ticks * 1_000 } };
    rows.push(await scenario(stack, `${o.ticks} ticks of fs.list`, long, o.runs));
    process.stderr.write(`${formatRow(rows.at(-1)!)}\n`);
    const large = largeTask(path.join(roots, 'large'), 45, 200);
    rows.push(await scenario(stack, '45 answers of 200 KB', large, o.runs));
  } finally {
    await stack.stop();
  }
  console.log(environmentLine());
  console.log(
    `one dev server (in memory), an in-process worker; per scenario one task, then ${o.runs} reads as \`starry logs\` makes them (taskResult + printTask, in this process); time: the median read; calls: one read's, by method; largest: the largest history answer (MiB = 2^20 bytes)\n`,
  );
  console.log(
    '| scenario | ticks | history MB | read s (median) | calls | history pages | describe / reverse / query | largest answer MiB | lines |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) console.log(formatRow(r));
  // The SDK's native runtime keeps the process alive after its workers and connections are closed.
  process.exit(rows.some((r) => r.failed) ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
