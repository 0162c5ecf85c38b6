/**
 * Live events benchmark (issue 33): how soon a history event reaches an SSE client, and what a stream
 * costs the server. Not a test: it prints figures for docs/BENCHMARKS.md.
 *
 * Per row: one task of `--ticks` ticks (an instant scripted LLM turn and an `fs.list` a tick) followed by
 * S concurrent `GET /v1/tasks/{id}/events?from=0` streams of the HTTP API on a real port, opened as the
 * task is submitted. Latency: an SSE event's arrival at the client minus its history event's
 * `eventTime` (the server's clock, the same machine). Server calls: the `GetWorkflowExecutionHistory`
 * and `DescribeWorkflowExecution` requests the API's client sent during the row, per stream per tick
 * (counted on its own Temporal client, which only the API uses).
 *
 * ```sh
 * npm run build && node lib/bench/sse.js --ticks 100 --streams 1,20
 * ```
 */
import { serve, type ServerType } from '@hono/node-server';
import { Connection } from '@temporalio/client';
import { createApp } from '../api/app';
import { AgentClient } from '../client/agent-client';
import { parsePosition } from '../client/history';
import { taskWorkflowId } from '../workflows/messages';
import { nowMs, readSse } from './sse-read';
import { allRunsEvents, environmentLine, eventMs, listingTask, percentile, startBenchStack } from './stack';

interface Options {
  ticks: number;
  streams: number[];
}

function parseArgs(argv: string[]): Options {
  const o: Options = { ticks: 100, streams: [1, 20] };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value = ''] = [argv[i], argv[i + 1]];
    if (flag === '--ticks' && /^\d+$/.test(value) && Number(value) >= 2) o.ticks = Number(value);
    else if (flag === '--streams' && /^\d+(,\d+)*$/.test(value)) o.streams = value.split(',').map(Number);
    else throw new RangeError(`usage: sse [--ticks N>=2] [--streams 1,20]; bad ${flag} ${value}`);
  }
  return o;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('sse');
  const { agents, dir } = stack;
  // The API's own client, its calls counted; the app as `starry api --insecure-dev` serves it (auth is not measured).
  const connection = await Connection.connect({ address: stack.address });
  const api = new AgentClient({ connection, taskQueue: stack.taskQueue });
  let calls = 0;
  const service = api.client.workflowService;
  for (const method of ['getWorkflowExecutionHistory', 'describeWorkflowExecution'] as const) {
    const original = service[method].bind(service) as (...args: unknown[]) => unknown;
    (service as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      calls++;
      return original(...args);
    };
  }
  const app = createApp({ agents: async () => api, auth: undefined, maxStreams: 1000 });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const address = server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const config = listingTask(dir, o.ticks);

  const rows: { streams: number; calls: number; latencies: number[] }[] = [];
  try {
    for (const streams of o.streams) {
      const agentId = `sse-${process.pid}-${streams}`;
      const before = calls;
      const { taskId } = await agents.submit(agentId, { goal: 'list the workspace', config });
      const workflowId = taskWorkflowId(agentId, taskId);
      const opened = nowMs();
      const reads = Array.from({ length: streams }, () =>
        readSse(`${base}/v1/tasks/${workflowId}/events?from=0`).then((r) => r.got),
      );
      const got = await Promise.all(reads);
      await agents.waitForTask(agentId, taskId);
      const made = calls - before;
      // Each event's time in the history, by its position.
      const events = await allRunsEvents(agents.client, workflowId);
      const runStarts: number[] = [];
      const timeOf = new Map<string, number>();
      for (const e of events) {
        // A position's run is its start in whole ms (client/history.ts).
        if (Number(e.eventId) === 1) runStarts.push(Math.floor(eventMs(e.eventTime)));
        timeOf.set(`${runStarts.at(-1)}.${String(e.eventId)}`, eventMs(e.eventTime));
      }
      const latencies = got.flatMap((list) =>
        list.flatMap(({ id, at }) => {
          const p = parsePosition(id);
          const t = p && timeOf.get(`${p.run}.${p.event}`);
          // Events written before the streams opened were replayed, not waited for.
          return t && t >= opened ? [at - t] : [];
        }),
      );
      rows.push({ streams, calls: made, latencies });
      process.stderr.write(
        `${streams} streams: ${made} calls, ${got.map((l) => l.length).join('/')} events read, ${latencies.length} timed\n`,
      );
    }
  } finally {
    await new Promise((r) => server.close(r));
    await connection.close();
    await stack.stop();
  }

  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-').padStart(8);
  const lines = [
    `Live events: one ${o.ticks}-tick task per row, S streams of it from its submit to its end`,
    environmentLine(),
    '',
    '| streams | events timed | p50 ms | p99 ms | max ms | server calls | per stream per tick |',
    '|--------:|-------------:|-------:|-------:|-------:|-------------:|--------------------:|',
    ...rows.map((r) => {
      const s = [...r.latencies].sort((a, b) => a - b);
      const perStreamTick = r.calls / (r.streams * o.ticks);
      return `| ${String(r.streams).padStart(7)} | ${String(s.length).padStart(12)} | ${f(percentile(s, 50))} | ${f(percentile(s, 99))} | ${f(s.at(-1) ?? NaN)} | ${String(r.calls).padStart(12)} | ${perStreamTick.toFixed(2).padStart(19)} |`;
    }),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
