/**
 * What one durable write of the transcript costs on this disk (issue 37): the floor of a tick's own
 * work. Not a test: it prints a table for docs/BENCHMARKS.md.
 *
 * A tick stores the tool's result, then the LLM's answer and its manifest side by side
 * (`activities/transcript.ts`), each a put of the local store (`activities/store/local.ts`: look for
 * the blob and open a temporary file at once, write, `fsync`, close, rename). It times, on an idle
 * event loop in a fresh folder (default: under the OS's temporary folder; `--dir` to measure another
 * disk), each in turn and one at a time: a put of new content the size of a tool message, two such
 * puts side by side (the LLM's), a put of content already stored, the `fsync` alone of such a file,
 * and one file system round trip (`stat`) through libuv's thread pool.
 *
 * ```sh
 * npm run build && node lib/bench/blob-put.js                   # 400 of each, 300-byte blobs
 * npm run build && node lib/bench/blob-put.js --n 2000 --bytes 1000 --dir /var/tmp
 * ```
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { localDirStore } from '../activities/store/local';
import { environmentLine, percentile } from './stack';

interface Options {
  n: number;
  bytes: number;
  dir: string;
}

function parseArgs(argv: string[]): Options {
  const usage = 'usage: blob-put [--n TIMES (>= 10)] [--bytes BLOB_BYTES (>= 1)] [--dir FOLDER]';
  const o: Options = { n: 400, bytes: 300, dir: os.tmpdir() };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const n = Number(value);
    if (flag === '--n' && Number.isInteger(n) && n >= 10) o.n = n;
    else if (flag === '--bytes' && Number.isInteger(n) && n >= 1) o.bytes = n;
    else if (flag === '--dir' && value) o.dir = path.resolve(value);
    else throw new RangeError(`${usage}; bad ${flag} ${value ?? ''}`);
  }
  return o;
}

/**
 * One measured operation: what it does with the `i`th content, and its time in ms (`fsync` alone
 * times only its own part).
 */
type Op = [name: string, run: (i: number) => Promise<number>];

/** The time `fn` takes, in ms. */
async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const { n, bytes, dir } = parseArgs(process.argv.slice(2));
  const root = mkdtempSync(path.join(dir, 'starry-blob-put-'));
  try {
    const store = localDirStore(path.join(root, 'blobs'));
    // Distinct content of `bytes` bytes for each put (a new blob each time, as a tick's are).
    const content = (tag: string, i: number) => `${tag}-${i}-`.padEnd(bytes, 'x');
    await store.put(content('warm', 0)); // its directories made, as a running worker's are
    const ops: Op[] = [
      ['put of new content (a tool result)', (i) => time(() => store.put(content('new', i)))],
      [
        'two puts side by side (the answer and the manifest)',
        (i) => time(() => Promise.all([store.put(content('a', i)), store.put(content('m', i))])),
      ],
      // The first row's content, put just before in the same round.
      ['put of content already stored', (i) => time(() => store.put(content('new', i)))],
      [
        'fsync of a new file alone',
        async (i) => {
          const fh = await open(path.join(root, `sync-${i}`), 'wx', 0o600);
          try {
            await fh.writeFile(content('sync', i));
            return await time(() => fh.sync());
          } finally {
            await fh.close();
          }
        },
      ],
      ['one file system round trip (stat)', () => time(() => stat(root))],
    ];
    // Round robin, one operation after the other: the disk's drift over the run reaches each alike.
    const ms = ops.map((): number[] => []);
    for (let i = 0; i < n; i++) for (const [k, [, run]] of ops.entries()) ms[k]?.push(await run(i));
    console.log(environmentLine());
    console.log(`${n} of each, in turn, one at a time; ${bytes}-byte blobs; folder ${root} (removed after)\n`);
    console.log('| operation | p50 ms | p90 ms | p99 ms |');
    console.log('|---|---|---|---|');
    for (const [k, [name]] of ops.entries()) {
      const sorted = (ms[k] ?? []).sort((a, b) => a - b);
      const [p50, p90, p99] = [50, 90, 99].map((p) => percentile(sorted, p).toFixed(3));
      console.log(`| ${name} | ${p50} | ${p90} | ${p99} |`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
