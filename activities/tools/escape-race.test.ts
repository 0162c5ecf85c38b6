/**
 * Escape corpus, the check-then-use races: another process swaps a path between an inside file and a
 * symlink to the outside (or a directory and a symlink to an outside directory) as fast as it can while
 * the real tools read and write it. Opening beneath the root by file descriptor (O_NOFOLLOW at every
 * step) makes the check and the use one operation: no read may see the secret, no write may land
 * outside, whatever the interleaving.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { runTool } from './index';
import { makeWorkspace, testPolicy, toolsConfig, type TempWorkspace } from './test-support';

const SECRET = 'SECRET-OUTSIDE-race-91c2';
const INSIDE = 'inside content';

/** A separate process that swaps `target` between `asFile` and `asLink` by atomic renames, until killed. */
function swapper(dir: string, target: string, asFile: string, asLink: string): ChildProcess {
  const script = `
    const fs = require('node:fs'); const p = require('node:path');
    const d = ${JSON.stringify(dir)}, t = p.join(d, ${JSON.stringify(target)});
    let n = 0;
    for (;;) {
      for (const [src, tmp] of [[${JSON.stringify(asFile)}, '.swap-a'], [${JSON.stringify(asLink)}, '.swap-b']]) {
        try {
          fs.rmSync(p.join(d, tmp), { recursive: true, force: true });
          fs.cpSync(p.join(d, src), p.join(d, tmp), { recursive: true, verbatimSymlinks: true });
          try {
            fs.renameSync(p.join(d, tmp), t);
          } catch {
            // A directory cannot replace a directory or a link in one rename: move the old one aside first.
            fs.rmSync(p.join(d, '.swap-old'), { recursive: true, force: true });
            fs.renameSync(t, p.join(d, '.swap-old'));
            fs.renameSync(p.join(d, tmp), t);
          }
        } catch {
          // A tool's write landed in a folder being moved or removed: this swap is skipped, the next one runs.
          continue;
        }
        // Written whole (a temporary file renamed over it): a reader that met the file truncated and not
        // yet rewritten read '' and counted no swaps at all (the race that failed this test under load).
        if (++n % 100 === 0) {
          fs.writeFileSync(p.join(d, '.swaps-next'), String(n));
          fs.renameSync(p.join(d, '.swaps-next'), p.join(d, '.swaps'));
        }
      }
    }`;
  return spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
}

async function swaps(dir: string): Promise<number> {
  return Number(await fs.readFile(path.join(dir, '.swaps'), 'utf8').catch(() => '0'));
}

/** Wait until the swapper has started swapping; the count so far. */
async function swapping(dir: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const n = await swaps(dir);
    if (n > 0) return n;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the swapper process never started swapping');
}

/**
 * Read at least 150 times, and on until the reads have met both sides of the race (some read the
 * inside file, some were refused) and the swapper has swapped 100 times more than `before` — on a
 * loaded machine the swapper, a process of its own, may get fewer turns than the reads.
 */
async function readsDuringSwaps(
  dir: string,
  before: number,
  read: () => Promise<unknown>,
): Promise<{ inside: number; refused: number }> {
  const seen = { inside: 0, refused: 0 };
  let swapped = false;
  for (let i = 0; i < 5000 && (i < 150 || seen.inside === 0 || seen.refused === 0 || !swapped); i++) {
    if (i % 10 === 0) swapped = (await swaps(dir)) - before >= 100;
    const r = (await read()) as { error?: unknown };
    expect(JSON.stringify(r)).not.toContain(SECRET);
    if (r.error) seen.refused++;
    else seen.inside++;
  }
  return seen;
}

describe('escape corpus: check-then-use races', () => {
  let ws: TempWorkspace;
  let child: ChildProcess | undefined;
  const call = (name: string, args: unknown) =>
    runTool({ name, args, tick: 1, workspace: [ws.root], tools: toolsConfig(), toolTimeoutMs: 10_000 }, undefined, {
      policy: testPolicy(ws),
    });

  beforeEach(async () => {
    ws = await makeWorkspace();
    await fs.writeFile(path.join(ws.outside, 'secret.txt'), SECRET);
  });
  afterEach(async () => {
    child?.kill('SIGKILL');
    child = undefined;
    await ws.cleanup();
  });

  it('a file swapped with a symlink to the outside: 150 reads, 50 cats and 30 writes, none escapes', async () => {
    await fs.writeFile(path.join(ws.root, 'file.src'), INSIDE);
    await fs.symlink(path.join(ws.outside, 'secret.txt'), path.join(ws.root, 'link.src'));
    await fs.writeFile(path.join(ws.root, 'race.txt'), INSIDE);
    child = swapper(ws.root, 'race.txt', 'file.src', 'link.src');
    const before = await swapping(ws.root);

    const seen = await readsDuringSwaps(ws.root, before, () => call('fs.read', { path: 'race.txt' }));
    for (let i = 0; i < 50; i++)
      expect(JSON.stringify(await call('shell.run', { command: 'cat', args: ['race.txt'] }))).not.toContain(SECRET);
    for (let i = 0; i < 30; i++) await call('fs.write', { path: 'race.txt', content: `write ${i}` });

    expect(await fs.readFile(path.join(ws.outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    expect(await fs.readdir(ws.outside)).toEqual(['secret.txt']);
    // The race really ran: the swapper swapped at least 100 times more (it counts by hundreds), and reads
    // met both sides of it.
    expect((await swaps(ws.root)) - before).toBeGreaterThanOrEqual(100);
    expect(seen.inside > 0 && seen.refused > 0).toBe(true);
  });

  it('a directory swapped with a symlink to an outside directory: 150 reads, 30 writes, 30 lists, none escapes', async () => {
    await fs.writeFile(path.join(ws.outside, 'OUTSIDE-ONLY.txt'), SECRET);
    await fs.mkdir(path.join(ws.root, 'dir.src'));
    await fs.writeFile(path.join(ws.root, 'dir.src', 'secret.txt'), INSIDE);
    await fs.symlink(ws.outside, path.join(ws.root, 'link.src'));
    await fs.cp(path.join(ws.root, 'dir.src'), path.join(ws.root, 'd'), { recursive: true });
    child = swapper(ws.root, 'd', 'dir.src', 'link.src');
    const before = await swapping(ws.root);

    const seen = await readsDuringSwaps(ws.root, before, () => call('fs.read', { path: 'd/secret.txt' }));
    for (let i = 0; i < 30; i++) await call('fs.write', { path: `d/new-${i}.txt`, content: 'x' });
    for (let i = 0; i < 30; i++)
      expect(JSON.stringify(await call('fs.list', { path: 'd' }))).not.toContain('OUTSIDE-ONLY');

    expect(await fs.readFile(path.join(ws.outside, 'secret.txt'), 'utf8')).toBe(SECRET);
    expect((await fs.readdir(ws.outside)).sort()).toEqual(['OUTSIDE-ONLY.txt', 'secret.txt']);
    expect((await swaps(ws.root)) - before).toBeGreaterThanOrEqual(100);
    expect(seen.inside > 0 && seen.refused > 0).toBe(true);
  });
});
