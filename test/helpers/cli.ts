/**
 * Running the `starry` CLI in the integration tests: the compiled bin against the run's server, in a
 * child process, as a user runs it (test/integration/cli-*.test.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { address, makeWorkspace, startHarness, uniqueId, type Harness } from './harness';

export const bin = path.join(projectRoot(), 'bin', 'starry.js');
/** This file's own task queue: no worker polls it unless a test starts one, so `run` embeds its own (`always`). */
export const QUEUE = uniqueId('cli');

/**
 * The CLI's environment against the run's server, which this folder's `starry dev` did not start: `run`
 * embeds a worker there only when told to (`--worker always`, here as STARRY_RUN_WORKER), and then changes
 * no routing (test/integration/take-over.test.ts).
 */
export function envFor(queue: string, extra: NodeJS.ProcessEnv = {}) {
  return {
    ...process.env,
    TEMPORAL_ADDRESS: address(),
    STARRY_TASK_QUEUE: queue,
    STARRY_RUN_WORKER: 'always',
    // No "using Temporal at" line for the run's server (a stranger's to this folder): the tests compare
    // stderr whole; test/integration/cli-server.test.ts checks the line.
    STARRY_QUIET: '1',
    ...extra,
  };
}

// What an attacker puts in a goal, a message, a note, model text or tool output to act on the reader's
// terminal: colours, a bell, an OSC 8 link, an OSC 52 clipboard write, a C1 CSI that clears the screen.
export const EVIL =
  '\x1b[31mred\x1b[0m \x07 \x1b]8;;https://evil.example/\x07link\x1b]8;;\x07 \x1b]52;c;cm0gLXJmIH4K\x07 \u009b2J';
/** How EVIL prints: every control character escaped visibly. */
export const EVIL_SHOWN =
  '\\x1b[31mred\\x1b[0m \\x07 \\x1b]8;;https://evil.example/\\x07link\\x1b]8;;\\x07 \\x1b]52;c;cm0gLXJmIH4K\\x07 \\u009b2J';
/** Any character a terminal acts on, but newline and tab. */
// eslint-disable-next-line no-control-regex -- finding raw control characters is the point
export const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

export function starry(args: string[], queue = QUEUE): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { env: envFor(queue), encoding: 'utf8', timeout: 90_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `starry` without blocking this process: needed while a worker runs in it (spawnSync would starve it). */
export async function starryAsync(
  args: string[],
  queue: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = starryLive(args, queue, env);
  const code = await p.exited;
  return { code, ...p.out() };
}

/** A `starry` process to talk to while it runs: wait for its output, interrupt it, await its exit. */
export function starryLive(args: string[], queue: string, env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [bin, ...args], { env: envFor(queue, env) });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<number>((resolve) => child.on('exit', (code, sig) => resolve(code ?? (sig ? 128 : -1))));
  const until = async (what: 'stdout' | 'stderr', re: RegExp) => {
    for (let i = 0; i < 1200 && !re.test(what === 'stdout' ? stdout : stderr); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(what === 'stdout' ? stdout : stderr).toMatch(re);
  };
  return { child, exited, until, out: () => ({ stdout, stderr }) };
}

/** A worker polling `queue` for the duration of a describe block (as `starry dev` would). */
export function withWorkerOn(queue: string): () => Harness {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ name: 'cli-worker', taskQueue: queue });
  });
  afterAll(async () => {
    await h?.stop();
  });
  return () => h;
}

/** An agent config file in a new workspace, for `--config`. */
export function writeConfig(config: object): string {
  const file = path.join(makeWorkspace(), 'agent.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}
