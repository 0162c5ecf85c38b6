/**
 * MCP tool calls against the worker's own TypeScript tools (issue 15): what a call to a tool of an MCP
 * server costs over a `defineTool` tool doing the same work (echo a string), warm, through the tool
 * runner the `tool` activity uses (`runTool`: lookup, argument check, the call, normalization), and how
 * long the first listing of a cold stdio server takes (spawn, initialize, tools/list). Temporal's part of
 * a call (scheduling the activity) is the same for both and is not measured here (see throughput.ts).
 *
 * The MCP server is the tests' fixture (test/fixtures/mcp/server.js, the SDK's McpServer), over stdio
 * in its sandbox (bubblewrap, the worker's resource limits, as `nobody` when run as root: issue 30) and
 * over Streamable HTTP on 127.0.0.1. Every call goes through the worker's policy, as the activity's do.
 * Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * ```sh
 * npm run build && node lib/bench/mcp.js [--calls 500] [--cold 10]
 * ```
 */
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, realpathSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { toolsConfigSchema, type McpServerConfig } from '../core/config';
import { parseWorkerPolicy } from '../core/worker-policy';
import { defineTool, runTool, ToolRegistry } from '../activities/tools';
import { sandboxReport } from '../activities/tools/confine';
import { McpPool } from '../activities/tools/mcp';
import { environmentLine, percentile } from './stack';

const SERVER = path.resolve(__dirname, '../../test/fixtures/mcp/server.js');
/** What the fixture's sandbox shows it read-only: its folder and the SDK. */
const READ_ONLY = [path.dirname(SERVER), path.resolve(__dirname, '../../node_modules')];
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startHttpFixture } = require('../../test/fixtures/mcp/http.js') as typeof import('../test/fixtures/mcp/http');

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const echo = defineTool({
  name: 'bench.echo',
  description: 'Echo the text back.',
  input: z.object({ text: z.string() }),
  run: ({ text }) => text,
});

async function timeCalls(n: number, call: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 20; i++) await call(); // warm-up: connections open, JIT warm
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await call();
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b);
}

const row = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;
const fmt = (ms: number) => ms.toFixed(3);

async function main(): Promise<void> {
  const calls = arg('--calls', 500);
  const cold = arg('--cold', 10);
  const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'starry-bench-mcp-')));
  const http = await startHttpFixture();
  const servers: Record<string, McpServerConfig> = {
    files: { command: 'node', args: [SERVER] },
    remote: { url: http.url },
  };
  const tools = toolsConfigSchema().parse({ mcp: servers });
  const registry = new ToolRegistry([echo]);
  const policy = parseWorkerPolicy({
    roots: [workspace],
    mcpCommands: [{ command: 'node', args: [SERVER], readOnly: READ_ONLY }],
    httpAllow: [`127.0.0.1:${http.port}`],
    allowRoot: true,
  });
  const request = (name: string) => ({
    name,
    args: { text: 'hello' },
    tick: 1,
    workspace: [workspace],
    tools,
    toolTimeoutMs: 30_000,
  });
  const run = async (name: string) => {
    const result = await runTool(request(name), undefined, { registry, policy });
    if (!result.success) throw new Error(`${name} failed: ${JSON.stringify(result.error)}`);
  };

  const results: Array<[string, number[]]> = [];
  for (const [label, name] of [
    ['TypeScript tool (defineTool)', 'bench.echo'],
    ['MCP tool, stdio, warm', 'files.echo'],
    ['MCP tool, Streamable HTTP, warm', 'remote.echo'],
  ] as const) {
    results.push([label, await timeCalls(calls, () => run(name))]);
  }
  await registry.close();

  const listing: number[] = [];
  for (let i = 0; i < cold; i++) {
    const pool = new McpPool();
    const t = performance.now();
    await pool.listTools('files', servers.files!, {
      cwd: workspace,
      sandbox: { roots: [workspace], readOnly: READ_ONLY, limits: policy.limits },
    });
    listing.push(performance.now() - t);
    await pool.close();
  }
  listing.sort((a, b) => a - b);
  await http.close();

  const base = percentile(results[0]![1], 50);
  console.log(environmentLine());
  console.log(await sandboxReport(policy.limits));
  console.log(
    `${calls} calls each after 20 warm-up calls; ${cold} cold listings (a new pool each: spawn, initialize, tools/list)\n`,
  );
  console.log(row(['', 'p50 ms', 'p95 ms', 'max ms', 'p50 over the TypeScript tool']));
  console.log(row(['---', '---', '---', '---', '---']));
  for (const [label, ms] of results) {
    const p50 = percentile(ms, 50);
    console.log(
      row([
        label,
        fmt(p50),
        fmt(percentile(ms, 95)),
        fmt(ms.at(-1)!),
        label.startsWith('TypeScript') ? '—' : `+${fmt(p50 - base)} ms`,
      ]),
    );
  }
  console.log(
    row([
      'cold stdio server: first tools/list',
      fmt(percentile(listing, 50)),
      fmt(percentile(listing, 95)),
      fmt(listing.at(-1)!),
      '—',
    ]),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
