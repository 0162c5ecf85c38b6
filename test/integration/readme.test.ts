/**
 * The README's "Using it" commands, run as written (in its order, from the project folder) against the
 * run's dev server and a worker process, as a user would after the quick start. A command that needs
 * what this machine cannot give (a cloud model's credentials) or runs until Ctrl-C is named below.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { address, uniqueId } from '../helpers/harness';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

jest.setTimeout(300_000);

/** Not run here, and why. */
const NOT_RUN: Array<[RegExp, string]> = [
  [/^npx starry dev\b/, 'runs until Ctrl-C (test/integration/cli.test.ts runs `starry dev`)'],
  [/^npx starry watch\b/, 'follows until Ctrl-C (test/integration/cli.test.ts runs `starry watch`)'],
  [/--llm gemini:/, 'needs Vertex AI credentials (test/integration/llm-providers.test.ts speaks its wire protocol)'],
  [/--llm openai:.*api\.openai\.com/, 'needs an OpenAI key (test/integration/llm-providers.test.ts speaks its wire protocol)'],
];

/** The commands of the README's "Using it" block, optional `[...]` parts dropped, comments cut. */
function readmeCommands(): string[] {
  const readme = readFileSync(path.join(projectRoot(), 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Using it'));
  const block = /```bash\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').replace(/\s*\[[^\]]*\]/g, '').trim())
    .filter((l) => l.startsWith('npx starry '));
}

/** Split a command line as a shell would for these lines (double quotes only). */
function argv(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');
}

let worker: ChildProcess;
const queue = uniqueId('readme');
beforeAll(async () => {
  worker = await startWorkerProcess(queue);
});
afterAll(async () => {
  if (worker) await killWorker(worker);
});

describe("the README's commands", () => {
  it('run as written, in order: none is a usage error or a crash, and each says what it did', () => {
    const commands = readmeCommands();
    expect(commands.length).toBeGreaterThanOrEqual(15);
    const ran: Array<{ line: string; code: number; out: string }> = [];
    for (const line of commands) {
      if (NOT_RUN.some(([re]) => re.test(line))) continue;
      const [, , ...args] = argv(line); // npx starry …
      const r = spawnSync(process.execPath, [path.join(projectRoot(), 'bin', 'starry.js'), ...args], {
        cwd: projectRoot(),
        env: { ...process.env, TEMPORAL_ADDRESS: address(), STARRY_TASK_QUEUE: queue },
        encoding: 'utf8',
        timeout: 120_000,
      });
      ran.push({ line, code: r.status ?? -1, out: `${r.stdout}${r.stderr}` });
    }
    const byCommand = (name: string) => ran.filter((r) => r.line.startsWith(`npx starry ${name} `));
    // A usage error (64) or a crash means the README lies.
    expect(ran.filter((r) => ![0, 1, 2].includes(r.code)).map((r) => `${r.line} → ${r.code}: ${r.out.slice(0, 300)}`)).toEqual([]);
    for (const name of ['submit', 'list', 'status', 'logs', 'message', 'halt', 'unlock', 'replay']) {
      expect(byCommand(name).map((r) => [r.line, r.code])).toEqual(byCommand(name).map((r) => [r.line, 0]));
    }
    // The scripted run completes; the offline 135M model ends as it may (completed, or locked by a breaker: exit 2).
    const runs = byCommand('run');
    expect(runs.map((r) => /--config examples\/eperm\/agent\.json/.test(r.line) ? r.code : 'any')).toEqual([0, 'any']);
    for (const r of runs) expect(r.out).toMatch(/^outcome (COMPLETED|SUSPENDED|FAILED) · agent /m);
    expect(byCommand('logs')[0]?.out).toMatch(/fs\.read FAILED EPERM/);
    expect(byCommand('logs')[1]?.out).toMatch(/^\[system\]\n[\s\S]*\[tool fs\.read\]\n【System Pain Alert】/);
    expect(byCommand('replay')[0]?.out).toMatch(/replay ok/);
    // resubmit names a task only a halt could have cancelled: as written there is none, and it says so.
    expect(byCommand('resubmit').map((r) => [r.code, r.out.trim()])).toEqual([[1, 'starry: agent a1 has no cancelled task task-3: a halt cancelled none of its tasks']]);
  });
});
