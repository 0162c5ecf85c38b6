/**
 * `starry run` as a user meets it (issue 14): how soon the first tick is on the screen when each LLM
 * call takes 3 s, and how soon Ctrl-C gives the terminal back while a call is in flight. Not a test:
 * it prints figures for docs/BENCHMARKS.md.
 *
 * Per run (after one unmeasured warm-up run), the real CLI (`node bin/starry.js run … --worker never`) is spawned
 * against this script's
 * dev server and in-process worker:
 *   (a) spawn → `submitted …` (stderr), → the line `tick 1 …` on stdout, and → the model's text of tick 1
 *       (the call sleeps 3 s);
 *   (b) spawn → exit of a two-tick task (3 s per call);
 *   (c) SIGINT while a 30 s call runs → the process has exited (code 130, the detach hint printed).
 *
 * ```sh
 * npm run build && node lib/bench/cli-live.js --runs 5
 * ```
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { projectRoot } from '../dev/paths';
import { environmentLine, percentile, startBenchStack, type BenchStack } from './stack';

const CALL_MS = 3000;
/** The key under which `starry()` notes when it sent SIGINT. */
const SIGINT_SENT = /SIGINT/;

function parseArgs(argv: string[]): { runs: number } {
  if (argv.length === 0) return { runs: 5 };
  const n = Number(argv[1]);
  if (argv[0] !== '--runs' || !Number.isInteger(n) || n < 1)
    throw new RangeError(`usage: cli-live [--runs N]; bad ${argv.join(' ')}`);
  return { runs: n };
}

interface Seen {
  /** ms after spawn at which a stdout line matching each pattern appeared. */
  at: Map<RegExp, number>;
  exitMs: number;
  code: number | null;
  stderr: string;
}

/**
 * Spawn `starry` with `args`; note when each pattern first shows on stdout or stderr; optionally SIGINT once
 * `interruptOn` shows on stderr.
 */
function starry(stack: BenchStack, args: string[], watch: RegExp[], interruptOn?: RegExp): Promise<Seen> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(projectRoot(), 'bin', 'starry.js'), ...args], {
    env: { ...process.env, TEMPORAL_ADDRESS: stack.address, STARRY_TASK_QUEUE: stack.taskQueue },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const at = new Map<RegExp, number>();
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    for (const re of watch) if (!at.has(re) && re.test(stdout)) at.set(re, performance.now() - t0);
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const re of watch) if (!at.has(re) && re.test(stderr)) at.set(re, performance.now() - t0);
    if (interruptOn && !at.has(interruptOn) && interruptOn.test(stderr)) {
      at.set(interruptOn, performance.now() - t0);
      // The LLM call is in flight by now (the scripted turn sleeps 30 s); interrupt after it started.
      setTimeout(() => {
        at.set(SIGINT_SENT, performance.now() - t0);
        child.kill('SIGINT');
      }, 1000);
    }
  });
  return new Promise((resolve) =>
    child.on('exit', (code) => resolve({ at, exitMs: performance.now() - t0, code, stderr })),
  );
}

function script(stack: BenchStack, name: string, turns: unknown[]): string {
  const file = path.join(stack.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ turns }));
  return file;
}

async function main(): Promise<void> {
  const { runs } = parseArgs(process.argv.slice(2));
  const stack = await startBenchStack('cli-live');
  const ws = path.join(stack.dir, 'ws');
  mkdirSync(ws, { recursive: true });
  writeFileSync(path.join(ws, 'notes.md'), '# Notes\n');
  const twoTicks = script(stack, 'two-ticks', [
    {
      delayMs: CALL_MS,
      text: 'I will list the workspace.',
      toolCalls: [{ name: 'fs.list', args: {} }],
      usage: { inputTokens: 100, outputTokens: 10 },
    },
    { delayMs: CALL_MS, text: 'Done.', usage: { inputTokens: 120, outputTokens: 5 } },
  ]);
  const slow = script(stack, 'slow', [{ delayMs: 30_000, text: 'slow' }]);
  const submitted = /^submitted /m;
  const firstTick = /^tick 1\b/m;
  const firstText = /I will list the workspace\./;
  const rows: Array<{
    submitted: number;
    tick: number;
    text: number;
    exit: number;
    code: number | null;
    ctrlC: number;
    ctrlCCode: number | null;
    hint: boolean;
  }> = [];
  try {
    // Run 0 warms the server and the worker (first workflows, first activity) and is not counted.
    for (let i = 0; i <= runs; i++) {
      const args = (goal: string, agent: string, file: string) => [
        'run',
        goal,
        '--agent',
        agent,
        '--llm',
        `scripted:${file}`,
        '--workspace',
        ws,
        '--worker',
        'never',
      ];
      const run = await starry(stack, args('list the workspace', `live-${i}`, twoTicks), [
        submitted,
        firstTick,
        firstText,
      ]);
      const ctrlC = await starry(stack, args('slow', `ctrlc-${i}`, slow), [], submitted);
      const sent = ctrlC.at.get(SIGINT_SENT) ?? NaN;
      if (run.code !== 0) throw new Error(`starry run exited ${run.code}:\n${run.stderr}`);
      if (i === 0) continue;
      rows.push({
        submitted: run.at.get(submitted) ?? NaN,
        tick: run.at.get(firstTick) ?? NaN,
        text: run.at.get(firstText) ?? NaN,
        exit: run.exitMs,
        code: run.code,
        ctrlC: ctrlC.exitMs - sent,
        ctrlCCode: ctrlC.code,
        hint: /starry watch/.test(ctrlC.stderr),
      });
      process.stderr.write(`run ${i}/${runs} done\n`);
    }
  } finally {
    await stack.stop();
  }
  const col = (pick: (r: (typeof rows)[number]) => number) => {
    const v = rows.map(pick).sort((a, b) => a - b);
    return `${percentile(v, 50).toFixed(0)} / ${(v.at(-1) ?? NaN).toFixed(0)}`;
  };
  console.log(
    `\`starry run\` live output — ${runs} runs, each LLM call ${CALL_MS} ms, worker in-process, CLI as a child process`,
  );
  console.log(environmentLine());
  console.log('');
  console.log('| measure | p50 / max (ms) |');
  console.log('|---|---|');
  console.log(
    `| spawn → \`submitted …\` printed (CLI loaded, connected, task accepted) | ${col((r) => r.submitted)} |`,
  );
  console.log(`| spawn → \`tick 1\` printed | ${col((r) => r.tick)} |`);
  console.log(`| spawn → tick 1's model text printed | ${col((r) => r.text)} |`);
  console.log(`| spawn → exit, 2-tick task (2 × ${CALL_MS} ms calls) | ${col((r) => r.exit)} |`);
  console.log(`| Ctrl-C during a call → exit | ${col((r) => r.ctrlC)} |`);
  console.log('');
  console.log(
    `exit codes: run ${[...new Set(rows.map((r) => r.code))].join(',')} · Ctrl-C ${[...new Set(rows.map((r) => r.ctrlCCode))].join(',')} · detach hint (\`starry watch\`) printed ${rows.filter((r) => r.hint).length}/${rows.length}`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
