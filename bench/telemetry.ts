/**
 * What OpenTelemetry costs a tick (issue 34): the same tasks on worker processes that differ only in
 * their `OTEL_*` environment, measured in one run. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * One in-memory dev server; three `starry worker` processes, each on its own task queue:
 * - `off`: no `OTEL_*` at all (what every worker runs unless its operator sets one);
 * - `on`: traces and metrics over OTLP/HTTP to a local receiver that answers 200 and counts what it
 *   gets (spans decoded from the real protobuf);
 * - `unreachable`: the same, to a closed port (export fails; tasks must not notice).
 * Rounds alternate the three (off, on, unreachable, off, …) so drift on this shared machine falls on
 * each alike. A round is A agents × T ticks (an instant scripted LLM turn and an `fs.list` per tick);
 * each worker's CPU is read from /proc between its own runs.
 *
 * ```sh
 * npm run build && node lib/bench/telemetry.js                       # 3 rounds of 50×10
 * npm run build && node lib/bench/telemetry.js --rounds 5 --scenario 100x10
 * ```
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import zlib from 'node:zlib';
import { Connection } from '@temporalio/client';
import { AgentClient } from '../client/agent-client';
import { freePort } from '../dev/dev-server';
import { decodeTraceRequest } from '../dev/trace-store';
import { environmentLine, listingTask, processCpuMs, spawnWorkers, startBenchStack } from './stack';

type Variant = 'off' | 'on' | 'unreachable';
const VARIANTS: Variant[] = ['off', 'on', 'unreachable'];

interface Options {
  rounds: number;
  agents: number;
  ticks: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { rounds: 3, agents: 50, ticks: 10 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--rounds' && argv[i + 1]) o.rounds = Number(argv[++i]);
    else if (argv[i] === '--scenario' && argv[i + 1]) {
      const [a, t] = (argv[++i] as string).split('x').map(Number);
      o.agents = a as number;
      o.ticks = t as number;
    } else throw new RangeError(`usage: telemetry [--rounds N] [--scenario AGENTSxTICKS]; bad ${argv[i]}`);
  }
  for (const [k, v] of Object.entries(o))
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`--${k} must be a whole number >= 1, got ${v}`);
  if (o.ticks < 2) throw new RangeError('a task needs at least 2 ticks');
  return o;
}

/** What the receiver got: requests, bytes and spans, by signal. */
interface Received {
  traces: { requests: number; bytes: number; spans: number };
  metrics: { requests: number; bytes: number };
}

/** A collector that answers every export with 200 and counts it. */
async function startCountingReceiver(): Promise<{ url: string; got: Received; close(): Promise<void> }> {
  const got: Received = { traces: { requests: 0, bytes: 0, spans: 0 }, metrics: { requests: 0, bytes: 0 } };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(raw) : raw;
      if (req.url === '/v1/traces') {
        got.traces.requests++;
        got.traces.bytes += raw.length;
        got.traces.spans += decodeTraceRequest(body).length;
      } else if (req.url === '/v1/metrics') {
        got.metrics.requests++;
        got.metrics.bytes += raw.length;
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    got,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The `OTEL_*` environment of each variant: none at all for `off`. */
function otelEnv(variant: Variant, receiverUrl: string, closedUrl: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  if (variant === 'off') return env;
  return {
    ...env,
    OTEL_EXPORTER_OTLP_ENDPOINT: variant === 'on' ? receiverUrl : closedUrl,
    OTEL_SERVICE_NAME: `bench-${variant}`,
    OTEL_METRIC_EXPORT_INTERVAL: '5000',
  };
}

interface Measure {
  wallMs: number;
  workerCpuMs: number;
  ticks: number;
}

/** `agents` new agents, one task of `ticks` each, on `agents`' task queue; timed from submit to the last result. */
async function round(client: AgentClient, pid: number, dir: string, name: string, o: Options): Promise<Measure> {
  const config = listingTask(path.join(dir, name), o.ticks);
  const ids = Array.from({ length: o.agents }, (_, i) => `tel-${name}-${i}`);
  const cpu0 = processCpuMs(pid);
  const t0 = performance.now();
  const submitted = await Promise.all(ids.map((id) => client.submit(id, { goal: 'list the workspace', config })));
  const results = await Promise.all(
    submitted.map((s, i) => client.waitForTask(ids[i] as string, s.taskId, { timeoutMs: 30 * 60_000 })),
  );
  const wallMs = performance.now() - t0;
  const bad = results.filter((r) => r.outcome !== 'COMPLETED' || r.ticks !== o.ticks);
  if (bad.length) throw new Error(`${bad.length} tasks of ${name} did not complete: ${JSON.stringify(bad[0])}`);
  return { wallMs, workerCpuMs: processCpuMs(pid) - cpu0, ticks: o.agents * o.ticks };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('telemetry');
  const receiver = await startCountingReceiver();
  const closedUrl = `http://127.0.0.1:${await freePort()}`;
  const children: ChildProcess[] = [];
  const sums = new Map<Variant, Measure[]>(VARIANTS.map((v) => [v, []]));
  let failed: unknown;
  try {
    const connection = await Connection.connect({ address: stack.address });
    const workers = new Map<Variant, { client: AgentClient; pid: number }>();
    for (const v of VARIANTS) {
      const taskQueue = `${stack.taskQueue}-${v}`;
      const env = otelEnv(v, receiver.url, closedUrl);
      const spawned = await spawnWorkers(stack, {
        count: 1,
        taskQueue,
        env,
        log: () => path.join(stack.dir, `worker-${v}.log`),
      });
      const child = spawned[0]!;
      children.push(child);
      workers.set(v, { client: new AgentClient({ connection, taskQueue }), pid: child.pid ?? 0 });
    }
    // Unmeasured: one small round each, so every worker has loaded its bundle and opened its caches.
    for (const v of VARIANTS) {
      const w = workers.get(v)!;
      await round(w.client, w.pid, stack.dir, `warm-${v}`, { ...o, agents: 2 });
    }
    await new Promise((resolve) => setTimeout(resolve, 6_000)); // the warm rounds' last batch (OTEL_BSP_SCHEDULE_DELAY 5 s)
    const spans0 = receiver.got.traces.spans;
    for (let r = 0; r < o.rounds; r++)
      for (const v of VARIANTS) {
        const w = workers.get(v)!;
        const m = await round(w.client, w.pid, stack.dir, `${r}-${v}`, o);
        sums.get(v)!.push(m);
        process.stderr.write(
          `round ${r + 1} ${v}: ${(m.wallMs / 1000).toFixed(1)} s, ${(m.workerCpuMs / m.ticks).toFixed(1)} CPU ms/tick\n`,
        );
      }
    // The last batches: the exporters flush every few seconds.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const ticksOn = sums.get('on')!.reduce((s, m) => s + m.ticks, 0);
    const spans = receiver.got.traces.spans - spans0;
    console.log(environmentLine());
    console.log(
      `one dev server (in memory); three worker processes (\`starry worker\`), one per variant; ${o.rounds} rounds of ${o.agents} agents × ${o.ticks} ticks, alternated\n`,
    );
    console.log('| OTEL | ticks/s (each round) | worker CPU ms/tick (each round) | mean CPU ms/tick |');
    console.log('|---|---|---|---|');
    for (const v of VARIANTS) {
      const ms = sums.get(v)!;
      const rate = ms.map((m) => (m.ticks / (m.wallMs / 1000)).toFixed(1)).join(' / ');
      const cpu = ms.map((m) => (m.workerCpuMs / m.ticks).toFixed(1)).join(' / ');
      const mean = ms.reduce((s, m) => s + m.workerCpuMs, 0) / ms.reduce((s, m) => s + m.ticks, 0);
      console.log(`| ${v} | ${rate} | ${cpu} | ${mean.toFixed(1)} |`);
    }
    console.log(
      `\nexported by \`on\`: ${spans} spans (${(spans / ticksOn).toFixed(2)} a tick), ${receiver.got.traces.requests} trace requests (${(receiver.got.traces.bytes / 1024).toFixed(0)} KiB), ${receiver.got.metrics.requests} metric requests (${(receiver.got.metrics.bytes / 1024).toFixed(0)} KiB) over the whole run`,
    );
  } catch (err) {
    failed = err;
    console.error('the benchmark failed:', err);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await receiver.close();
    await stack.stop();
  }
  // The SDK's native runtime keeps the process alive after its connections are closed.
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
