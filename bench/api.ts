/**
 * HTTP API benchmark (issue 9): what the API adds over the client it wraps, and the Lambda handler's
 * cold and warm start. Not a test: it prints figures for docs/BENCHMARKS.md.
 *
 * - submit-and-wait: a one-tick scripted task submitted with `?wait=60` over HTTP (the app served by
 *   @hono/node-server on loopback, bearer JWT checked on every request), side by side with the same task
 *   through AgentClient in-process (`submit` then `waitForTask`); p50/p99 over `--runs`.
 * - sustained submits/s: `--burst` submits (no wait) spread over 10 agents, sequential, over HTTP and in-process.
 * - Lambda: the handler invoked in-process with API Gateway v2 events: the first invocation (module
 *   load, app build and Temporal connect included) and warm invocations (GET of the agent).
 * Everything runs here: an in-memory `temporal server start-dev` and an in-process worker.
 *
 * ```sh
 * npm run build && node lib/bench/api.js --runs 30 --burst 200
 * ```
 */
import { performance } from 'node:perf_hooks';
import { serve, type ServerType } from '@hono/node-server';
import { createApp } from '../api/app';
import { authenticator, devToken } from '../api/auth';
import { parseAgentConfig } from '../core/config';
import { environmentLine, percentile, startBenchStack } from './stack';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function parseArgs(argv: string[]): { runs: number; burst: number } {
  const o = { runs: 30, burst: 200 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = ({ '--runs': 'runs', '--burst': 'burst' } as const)[argv[i] as string];
    const n = Number(argv[i + 1]);
    if (!key || !Number.isInteger(n) || n < 1)
      throw new RangeError(`usage: api [--runs N] [--burst N]; bad ${argv[i]} ${argv[i + 1] ?? ''}`);
    o[key] = n;
  }
  return o;
}

const SECRET = 'bench-secret-that-is-at-least-32-characters';

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('api');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'starry-bench-api-'));
  const script = path.join(dir, 'turns.json');
  writeFileSync(script, JSON.stringify({ turns: [{ text: 'Done.', usage: { inputTokens: 1, outputTokens: 1 } }] }));
  mkdirSync(path.join(dir, 'ws'));
  const config = parseAgentConfig({ workspace: [path.join(dir, 'ws')], verify: false }, `scripted:${script}`);
  const app = createApp({ agents: async () => stack.agents, auth: authenticator({ secret: SECRET }) });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const address = server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const token = await devToken({ secret: SECRET, sub: 'bench', roles: ['operator'] });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const http = (agentId: string, wait: boolean) =>
    fetch(`${base}/v1/agents/${agentId}/tasks${wait ? '?wait=60' : ''}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ goal: 'bench', config }),
    }).then(async (r) => {
      if (r.status !== (wait ? 200 : 202)) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
    });
  const direct = async (agentId: string, wait: boolean) => {
    const { taskId } = await stack.agents.submit(agentId, { goal: 'bench', config });
    if (wait) await stack.agents.waitForTask(agentId, taskId, { pollMs: 20 });
  };

  try {
    const rows: string[] = [];
    for (const [name, run] of [
      ['HTTP API', http],
      ['AgentClient in-process', direct],
    ] as const) {
      const agentId = `bench-${name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
      await run(agentId, true); // warm-up: the agent exists, connections are open
      const times: number[] = [];
      for (let i = 0; i < opts.runs; i++) {
        const t0 = performance.now();
        await run(agentId, true);
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      // Spread over 10 agents (each takes at most 100 queued tasks); they exist before the clock starts.
      const burstAgents = Array.from({ length: 10 }, (_, i) => `${agentId}-burst-${i}`);
      for (const a of burstAgents) await run(a, false);
      const t0 = performance.now();
      for (let i = 0; i < opts.burst; i++) await run(burstAgents[i % burstAgents.length]!, false);
      const rate = opts.burst / ((performance.now() - t0) / 1000);
      rows.push(
        `| ${name} | ${percentile(times, 50).toFixed(0)} | ${percentile(times, 99).toFixed(0)} | ${rate.toFixed(1)} |`,
      );
    }

    // The Lambda handler, in-process, against the same server.
    Object.assign(process.env, {
      TEMPORAL_ADDRESS: stack.address,
      STARRY_TASK_QUEUE: stack.taskQueue,
      STARRY_API_JWT_SECRET: SECRET,
    });
    const t0 = performance.now();
    const lambda = await import('../api/lambda');
    const viewer = await devToken({ secret: SECRET, sub: 'bench', roles: ['viewer'] });
    const agentPath = `/v1/agents/bench-http-${process.pid}`;
    const invoke = () =>
      lambda.handler(apiGatewayEvent('GET', agentPath, viewer) as never, { awsRequestId: 'bench' } as never);
    const cold = await invoke();
    const coldMs = performance.now() - t0;
    if (cold.statusCode !== 200) throw new Error(`lambda cold invocation: ${cold.statusCode} ${cold.body}`);
    const warm: number[] = [];
    for (let i = 0; i < opts.runs; i++) {
      const w0 = performance.now();
      await invoke();
      warm.push(performance.now() - w0);
    }
    warm.sort((a, b) => a - b);

    console.log(environmentLine());
    console.log(`runs ${opts.runs}, burst ${opts.burst}; one-tick scripted task, JWT checked on every HTTP request\n`);
    console.log('| path | submit-and-wait p50 ms | p99 ms | sustained submits/s |');
    console.log('|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(`\n| Lambda handler (in-process) | ms |\n|---|---|`);
    console.log(`| cold: first invocation (module load, app, Temporal connect) | ${coldMs.toFixed(0)} |`);
    console.log(
      `| warm: GET agent p50 / p99 | ${percentile(warm, 50).toFixed(1)} / ${percentile(warm, 99).toFixed(1)} |`,
    );
    console.log(`| Temporal connections opened | ${lambda.connectionsOpened()} |`);
  } finally {
    await new Promise((r) => server.close(r));
    await stack.stop();
  }
}

function apiGatewayEvent(method: string, rawPath: string, token: string) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: '',
    headers: { host: 'bench.execute-api.local', authorization: `Bearer ${token}` },
    requestContext: {
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
      requestId: 'bench',
      routeKey: '$default',
      stage: '$default',
      timeEpoch: Date.now(),
    },
    isBase64Encoded: false,
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
