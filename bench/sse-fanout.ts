/**
 * SSE fan-out (issue 53): the Temporal calls the HTTP API makes per tick while N clients follow one
 * task. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * Per row: a task of `--ticks` ticks whose first tick waits for a human approval (then an `fs.list` a
 * tick, an instant scripted LLM turn each) and N concurrent `GET /v1/tasks/{id}/events?from=0` streams
 * of the API on a real port. Once every stream has caught up (it has the approval it waits on), the
 * call is approved and the task runs to its end: the history calls the API's own Temporal client makes
 * from then on (`GetWorkflowExecutionHistory`, its reverse, `DescribeWorkflowExecution`), per tick, are
 * the live cost; the calls made while the streams opened and caught up are their one-off cost. Latency
 * is an event's arrival at a client minus its history event's time, for the events after the approval.
 * The script uses only what main had before issue 53, so the same file runs on both (docs/BENCHMARKS.md).
 *
 * ```sh
 * npm run build && node lib/bench/sse-fanout.js                  # 1, 10 and 100 clients, 50 ticks
 * npm run build && node lib/bench/sse-fanout.js --clients 1,10,100,1000 --ticks 20
 * ```
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { Connection } from '@temporalio/client';
import { createApp } from '../api/app';
import { AgentClient } from '../client/agent-client';
import { parsePosition } from '../client/history';
import { parseAgentConfig, type AgentConfig } from '../core/config';
import { nowMs, readSse } from './sse-read';
import { allRunsEvents, environmentLine, eventMs, percentile, startBenchStack } from './stack';

interface Options {
  ticks: number;
  clients: number[];
}

function parseArgs(argv: string[]): Options {
  const o: Options = { ticks: 50, clients: [1, 10, 100] };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value = ''] = [argv[i], argv[i + 1]];
    if (flag === '--ticks' && /^\d+$/.test(value) && Number(value) >= 3) o.ticks = Number(value);
    else if (flag === '--clients' && /^[1-9]\d*(,[1-9]\d*)*$/.test(value)) o.clients = value.split(',').map(Number);
    else throw new RangeError(`usage: sse-fanout [--ticks N>=3] [--clients 1,10,100]; bad ${flag} ${value}`);
  }
  return o;
}

const COUNTED = ['getWorkflowExecutionHistory', 'getWorkflowExecutionHistoryReverse', 'describeWorkflowExecution'];
/** A task whose first tick's `fs.read` waits for approval, then `fs.list` a tick, then an answer. */
function gatedTask(dir: string, ticks: number): AgentConfig {
  mkdirSync(path.join(dir, 'ws'), { recursive: true });
  writeFileSync(path.join(dir, 'ws', 'notes.md'), '# Notes\n');
  const usage = { inputTokens: 100, outputTokens: 10 };
  const call = (name: string, args: unknown) => ({ toolCalls: [{ name, args }], usage });
  const script = path.join(dir, 'fanout-turns.json');
  writeFileSync(
    script,
    JSON.stringify({
      turns: [
        call('fs.read', { path: 'notes.md' }),
        ...Array.from({ length: ticks - 2 }, () => call('fs.list', {})),
        { text: 'Done.', usage },
      ],
    }),
  );
  return parseAgentConfig(
    {
      workspace: [path.join(dir, 'ws')],
      verify: false,
      safety: { maxTicks: ticks + 5 },
      tools: { approval: { ask: ['fs.read'] } },
    },
    `scripted:${script}`,
  );
}

/** Wait until `done()` holds, up to `ms`. */
async function until(what: string, done: () => boolean, ms = 300_000): Promise<void> {
  const t0 = Date.now();
  while (!done()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Row {
  clients: number;
  ticks: number;
  openCalls: number;
  liveCalls: number;
  latencies: number[];
  events: number;
  /** Streams that ended with an `error` event (or closed) instead of the task's `end`, and the first such error. */
  failed: number;
  firstError?: string;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('sse-fanout');
  const { agents, dir } = stack;
  // The API's own client, its history calls counted; the app as `starry api --insecure-dev` serves it.
  const connection = await Connection.connect({ address: stack.address });
  const api = new AgentClient({ connection, taskQueue: stack.taskQueue });
  let calls = 0;
  const service = api.client.workflowService as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const m of COUNTED) {
    const original = service[m]!.bind(service);
    service[m] = (...args: unknown[]) => {
      calls++;
      return original(...args);
    };
  }
  const most = Math.max(...o.clients, 1);
  // Every client comes from 127.0.0.1: the caps are raised to the largest row.
  const app = createApp({
    agents: async () => api,
    auth: undefined,
    maxStreams: most,
    maxStreamsPerTenant: most,
    maxStreamsPerClient: most,
  });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const address = server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const config = gatedTask(dir, o.ticks);

  const rows: Row[] = [];
  try {
    for (const clients of o.clients) {
      const agentId = `fanout-${process.pid}-${clients}`;
      const { taskId, workflowId } = await agents.submit(agentId, { goal: 'read, then list', config });
      let pending: { callId: string } | undefined;
      const t0 = Date.now();
      while (!(pending = (await agents.approvals(agentId)).approvals[0])) {
        if (Date.now() - t0 > 120_000) throw new Error(`${agentId}'s task never waited for approval`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const before = calls;
      let ready = 0;
      const reads = Array.from({ length: clients }, () =>
        readSse(`${base}/v1/tasks/${workflowId}/events?from=0`, (block) => {
          // Caught up once it has the approval the task waits on.
          if (/^event: approval$/m.test(block) && /"waiting"/.test(block)) ready++;
        }),
      );
      await until('every stream to catch up', () => ready >= clients);
      const openCalls = calls - before;
      const released = nowMs();
      const live = calls;
      await agents.decide(agentId, { callId: pending.callId, decision: 'approve', by: 'bench' });
      const read = await Promise.all(reads);
      await agents.waitForTask(agentId, taskId);
      const liveCalls = calls - live;
      const got = read.map((r) => r.got);
      const latencies = latenciesAfter(await allRunsEvents(agents.client, workflowId), got, released);
      const failed = read.filter((r) => r.error !== undefined);
      const events = Math.max(...got.map((l) => l.length));
      rows.push({ clients, ticks: o.ticks, openCalls, liveCalls, latencies, events, failed: failed.length });
      if (failed[0]?.error) rows.at(-1)!.firstError = failed[0].error;
      process.stderr.write(
        `${clients} clients: ${openCalls} calls to open, ${liveCalls} while live, ${got.map((l) => l.length).join('/')} events${failed[0] ? `; ${failed.length} failed: ${failed[0].error}` : ''}\n`,
      );
    }
  } finally {
    (server as { closeAllConnections?: () => void }).closeAllConnections?.();
    await new Promise((r) => server.close(r));
    await connection.close();
    await stack.stop();
  }
  process.stdout.write(`${table(o, rows).join('\n')}\n`);
}

/** Each event's arrival minus its history event's time, for events written after `since`. */
function latenciesAfter(
  events: Awaited<ReturnType<typeof allRunsEvents>>,
  got: { id: string; at: number }[][],
  since: number,
): number[] {
  const runStarts: number[] = [];
  const timeOf = new Map<string, number>();
  for (const e of events) {
    // A position's run is its start in whole ms (client/history.ts).
    if (Number(e.eventId) === 1) runStarts.push(Math.floor(eventMs(e.eventTime)));
    timeOf.set(`${runStarts.at(-1)}.${String(e.eventId)}`, eventMs(e.eventTime));
  }
  return got.flatMap((list) =>
    list.flatMap(({ id, at }) => {
      const p = parsePosition(id);
      const t = p && timeOf.get(`${p.run}.${p.event}`);
      return t && t >= since ? [at - t] : [];
    }),
  );
}

function table(o: Options, rows: Row[]): string[] {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
  return [
    `SSE fan-out: one ${o.ticks}-tick task per row, N clients following it; calls are the API's history calls`,
    environmentLine(),
    '',
    '| clients | events | calls to open (per client) | calls while live | per tick | p50 ms | p99 ms | streams failed |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => {
      const s = [...r.latencies].sort((a, b) => a - b);
      // The first tick ran before the streams opened; the live part is the rest.
      const liveTicks = r.ticks - 1;
      return `| ${r.clients} | ${r.events} | ${r.openCalls} (${f(r.openCalls / r.clients)}) | ${r.liveCalls} | ${(r.liveCalls / liveTicks).toFixed(2)} | ${f(percentile(s, 50))} | ${f(percentile(s, 99))} | ${r.failed} |`;
    }),
    ...rows.filter((r) => r.firstError).map((r) => `\n${r.clients} clients, first failure: ${r.firstError}`),
  ];
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
