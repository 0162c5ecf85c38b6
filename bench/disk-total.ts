/**
 * What the tenant's disk cap (`limits.tenantBytes`, issue 52) costs a tool call when the tenant's space
 * holds a large tree. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * For each size it builds a tenant's space (`<root>/acme`) of workspaces holding that many entries
 * (directories of 1,000 files of 100 bytes) beside the calling agent's own small workspace, then times
 * on the real file system: one walk of the whole space (what measuring it on every call would cost),
 * an `fs.write` through the tool activity's `runTool` — the first (the worker measures the space),
 * then the next ones (it keeps the total up to date with what its calls add) — the same write with no
 * tenant cap (no policy: the workspace's own check alone), and a write refused at the tenant's cap
 * (decided on a measure at most 5 s old: the first refusal measures, the next ones within 5 s do not).
 *
 * ```sh
 * npm run build && node lib/bench/disk-total.js                         # 10,000, 100,000 and 300,000 entries
 * npm run build && node lib/bench/disk-total.js --entries 50000 --n 50 --dir /var/tmp
 * ```
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { toolsConfigSchema } from '../core/config';
import { parseWorkerPolicy, type WorkerPolicy } from '../core/worker-policy';
import { measureTree } from '../activities/tools/disk';
import { runTool, type RunOptions } from '../activities/tools/index';
import { environmentLine, percentile } from './stack';

interface Options {
  entries: number[];
  n: number;
  dir: string;
}

function parseArgs(argv: string[]): Options {
  const usage = 'usage: disk-total [--entries N[,N...] (each >= 1000)] [--n CALLS (>= 5)] [--dir FOLDER]';
  const o: Options = { entries: [10_000, 100_000, 300_000], n: 30, dir: os.tmpdir() };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const n = Number(value);
    const list = (value ?? '').split(',').map(Number);
    if (flag === '--entries' && list.every((e) => Number.isInteger(e) && e >= 1000)) o.entries = list;
    else if (flag === '--n' && Number.isInteger(n) && n >= 5) o.n = n;
    else if (flag === '--dir' && value) o.dir = path.resolve(value);
    else throw new RangeError(`${usage}; bad ${flag} ${value ?? ''}`);
  }
  return o;
}

/** The time `fn` takes, in ms; it must succeed (or fail as `expect` says). */
async function time(fn: () => Promise<{ success: boolean; error?: { code: string } }>, expect = 'ok'): Promise<number> {
  const t0 = performance.now();
  const r = await fn();
  const ms = performance.now() - t0;
  const got = r.success ? 'ok' : (r.error?.code ?? 'failed');
  if (got !== expect) throw new Error(`a timed call ended ${got}, not ${expect}: ${JSON.stringify(r.error)}`);
  return ms;
}

/** A tenant's space of `entries` entries in workspaces of 10 directories of 1,000 files, and a small workspace to call from. */
function buildSpace(root: string, entries: number): string {
  const space = path.join(root, 'acme');
  const own = path.join(space, 'caller');
  mkdirSync(own, { recursive: true });
  for (let i = 0; i < 10; i++) writeFileSync(path.join(own, `f${i}.txt`), 'x'.repeat(100));
  const body = 'y'.repeat(100);
  for (let made = 0, d = 0; made < entries; d++) {
    const dir = path.join(space, `ws-${Math.floor(d / 10)}`, `d${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 1000 && made < entries; f++, made++) writeFileSync(path.join(dir, `f${f}`), body);
  }
  return own;
}

const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));

async function row(root: string, entries: number, n: number): Promise<string> {
  const own = buildSpace(root, entries);
  const space = path.join(root, 'acme');
  const walks: number[] = [];
  let total = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    total = (await measureTree([space], { source: 'bench' })).bytes;
    walks.push(performance.now() - t0);
  }
  const policy = (tenantBytes: number): WorkerPolicy =>
    parseWorkerPolicy({ roots: [root], limits: { tenantBytes, workspaceBytes: 1024 * 1024 * 1024 } });
  // Five files written over and over (their blocks already counted), or a new one.
  const write = (run: RunOptions, i: number, file = `out-${i % 5}.txt`) =>
    runTool(
      {
        name: 'fs.write',
        args: { path: file, content: `call ${i}`.padEnd(2000, '.') },
        tick: 1,
        workspace: [own],
        tools: toolsConfigSchema().parse({}),
        toolTimeoutMs: 600_000,
      },
      undefined,
      run,
    );
  const capped = { policy: policy(64 * 1024 * 1024 * 1024), tenant: 'acme' };
  const first = await time(() => write(capped, 0));
  const later: number[] = [];
  for (let i = 1; i <= n; i++) later.push(await time(() => write(capped, i)));
  const bare: number[] = [];
  for (let i = 1; i <= n; i++) bare.push(await time(() => write({}, i)));
  // A cap the space is already at: every write that grows it is refused. Past 5 s the worker's known
  // total is too old to refuse on, so the first refusal measures the space; the next one does not.
  await new Promise((resolve) => setTimeout(resolve, 5_100));
  const full = { policy: policy(total), tenant: 'acme' };
  const grow = (i: number) => () => write(full, i, `new-${i}.txt`);
  const refusedFirst = await time(grow(0), 'E_LIMIT');
  const refusedNext = await time(grow(1), 'E_LIMIT');
  const s = (xs: number[]) => xs.sort((a, b) => a - b);
  const [l, b, w] = [s(later), s(bare), s(walks)];
  return `| ${entries.toLocaleString('en')} | ${fmt(percentile(w, 50))} | ${fmt(first)} | ${fmt(percentile(l, 50))} / ${fmt(percentile(l, 90))} | ${fmt(percentile(b, 50))} / ${fmt(percentile(b, 90))} | ${fmt(refusedFirst)} / ${fmt(refusedNext)} |`;
}

async function main(): Promise<void> {
  const { entries, n, dir } = parseArgs(process.argv.slice(2));
  const rows: string[] = [];
  for (const e of entries) {
    const root = mkdtempSync(path.join(dir, 'starry-disk-total-'));
    try {
      rows.push(await row(root, e, n));
    } finally {
      execFileSync('rm', ['-rf', root]);
    }
  }
  console.log(environmentLine());
  console.log(
    `fs.write of 2,000 bytes from a 10-file workspace; ${n} calls a column; folders under ${dir} (removed after)\n`,
  );
  console.log(
    "| entries in the tenant's space | one walk of the space, ms (p50 of 3) | first call, ms | next calls p50 / p90, ms | no tenant cap p50 / p90, ms | refused at the cap: first / next, ms |",
  );
  console.log('|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) console.log(r);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
