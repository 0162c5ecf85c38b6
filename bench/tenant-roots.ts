/**
 * What tenant-scoped roots cost a tool call (issue 52): the policy check every tool call makes first
 * (`checkPolicy`, activities/tools/policy-check.ts), for a plain agent (the roots themselves) and for a
 * tenant's (its part `<root>/<tenant>`, made when missing, compared by real path), each followed by the
 * call's own `fs.read` of a small file. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * ```sh
 * npm run build && node lib/bench/tenant-roots.js [--n 2000]
 * ```
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { runTool } from '../activities/tools';
import { checkPolicy } from '../activities/tools/policy-check';
import { Workspace } from '../activities/tools/sandbox';
import { parseAgentConfig } from '../core/config';
import { parseWorkerPolicy } from '../core/worker-policy';
import { environmentLine, percentile } from './stack';

const n = Number(process.argv[process.argv.indexOf('--n') + 1]) || 2000;

async function main(): Promise<void> {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'starry-tenant-roots-')));
  try {
    const policy = parseWorkerPolicy({ roots: [root] });
    const tools = parseAgentConfig({ workspace: [root] }, 'scripted:/dev/null').tools;
    const rows: string[] = [];
    for (const [who, tenant] of [
      ['a plain agent', undefined],
      ['a tenant', 'acme'],
    ] as const) {
      const ws = path.join(root, ...(tenant ? [tenant] : []), 'ws');
      mkdirSync(ws, { recursive: true });
      writeFileSync(path.join(ws, 'notes.md'), 'hello\n');
      const check: number[] = [];
      const call: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await checkPolicy(policy, { workspace: [ws], tools }, 'bench', new Workspace([ws], 'bench'), tenant);
        const t1 = performance.now();
        const request = {
          name: 'fs.read',
          args: { path: 'notes.md' },
          tick: 1,
          workspace: [ws],
          tools,
          toolTimeoutMs: 10_000,
        };
        await runTool(request, undefined, { policy });
        check.push(t1 - t0);
        call.push(performance.now() - t1);
      }
      const ms = (xs: number[], p: number) =>
        percentile(
          [...xs].sort((a, b) => a - b),
          p,
        ).toFixed(3);
      rows.push(`| ${who} | ${ms(check, 50)} | ${ms(check, 99)} | ${ms(call, 50)} |`);
    }
    console.log(`\ntenant-scoped roots · ${n} calls each · ${environmentLine()}\n`);
    console.log('| agent | policy check p50 (ms) | p99 (ms) | the fs.read after it, p50 (ms) |\n|---|---:|---:|---:|');
    for (const r of rows) console.log(r);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
