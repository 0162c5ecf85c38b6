/**
 * The README's "Using it" commands, run as written (in its order, from the project folder) against the
 * run's dev server and a worker process, as a user would after the quick start. A command that needs
 * what this machine cannot give (a cloud model's credentials) or runs until Ctrl-C is named below.
 * Also as written: the quick start's setup (`npm run demo`'s) and docs/DEPLOY.md's `cdk synth`.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../dev/paths';
import { address, uniqueId } from '../helpers/harness';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

jest.setTimeout(300_000);

/** Not run here, and why. */
const NOT_RUN: Array<[RegExp, string]> = [
  [/^npx starry dev\b/, 'runs until Ctrl-C (test/integration/cli-dev.test.ts runs `starry dev`)'],
  [/^npx starry watch\b/, 'follows until Ctrl-C (test/integration/cli-worker.test.ts runs `starry watch`)'],
  [
    /^npx starry promote\b/,
    "changes the routing of the run's shared deployment (test/integration/rollout.test.ts promotes on a deployment of its own)",
  ],
  [/--llm gemini:/, 'needs Vertex AI credentials (test/integration/llm-providers.test.ts speaks its wire protocol)'],
  [/--llm bedrock:/, 'needs AWS credentials (test/integration/llm-providers.test.ts speaks its wire protocol)'],
  [
    /--llm openai:.*api\.openai\.com/,
    'needs an OpenAI key (test/integration/llm-providers.test.ts speaks its wire protocol)',
  ],
];

/** The commands of the README's "Using it" block, optional `[...]` parts dropped, comments cut. */
function readmeCommands(): string[] {
  const readme = readFileSync(path.join(projectRoot(), 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Using it'));
  const block = /```bash\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((l) =>
      l
        .replace(/\s+#.*$/, '')
        .replace(/\s*\[[^\]]*\]/g, '')
        .trim(),
    )
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
        // STARRY_QUIET: the run's server is not this folder's, and each output is compared without that line.
        env: { ...process.env, TEMPORAL_ADDRESS: address(), STARRY_TASK_QUEUE: queue, STARRY_QUIET: '1' },
        encoding: 'utf8',
        timeout: 120_000,
      });
      ran.push({ line, code: r.status ?? -1, out: `${r.stdout}${r.stderr}` });
    }
    const byCommand = (name: string) => ran.filter((r) => r.line.startsWith(`npx starry ${name} `));
    // A usage error (64) or a crash means the README lies.
    expect(
      ran.filter((r) => ![0, 1, 2].includes(r.code)).map((r) => `${r.line} → ${r.code}: ${r.out.slice(0, 300)}`),
    ).toEqual([]);
    for (const name of ['submit', 'list', 'status', 'logs', 'message', 'halt', 'unlock', 'replay']) {
      expect(byCommand(name).map((r) => [r.line, r.code])).toEqual(byCommand(name).map((r) => [r.line, 0]));
    }
    // The scripted run completes; the offline 135M model ends as it may (completed, or locked by a breaker: exit 2).
    const runs = byCommand('run');
    expect(runs.map((r) => (/--config examples\/eperm\/agent\.json/.test(r.line) ? r.code : 'any'))).toEqual([
      0,
      'any',
    ]);
    for (const r of runs) expect(r.out).toMatch(/^outcome (COMPLETED|SUSPENDED|FAILED) · agent /m);
    expect(byCommand('logs')[0]?.out).toMatch(/fs\.read FAILED EPERM/);
    expect(byCommand('logs')[1]?.out).toMatch(/^\[system\]\n[\s\S]*\[tool fs\.read\]\n【System Pain Alert】/);
    expect(byCommand('replay')[0]?.out).toMatch(/replay ok/);
    // resubmit names a task only a halt could have cancelled: as written there is none, and it says so.
    expect(byCommand('resubmit').map((r) => [r.code, r.out.trim()])).toEqual([
      [
        1,
        'starry: agent a1 has no cancelled task task-3: a halt cancelled none of its queued tasks, so there is nothing to resubmit',
      ],
    ]);
  });
});

describe("`npm run demo`'s setup", () => {
  it('installs neither the local model nor node-llama-cpp: the demo runs a scripted controller', () => {
    // A copy of the project's scripts with everything else already in place (the npm packages, the
    // build, the Temporal CLI), so only what the demo's setup would add is installed here.
    const root = projectRoot();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'starry-setup-'));
    cpSync(path.join(root, 'scripts'), path.join(dir, 'scripts'), { recursive: true });
    cpSync(path.join(root, 'package-lock.json'), path.join(dir, 'package-lock.json'));
    utimesSync(path.join(dir, 'package-lock.json'), new Date(0), new Date(0));
    symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
    mkdirSync(path.join(dir, 'lib'));
    writeFileSync(path.join(dir, 'lib', '.build-stamp'), '');
    mkdirSync(path.join(dir, '.tools'));
    symlinkSync(path.join(root, '.tools', 'temporal'), path.join(dir, '.tools', 'temporal'));
    // The demo script's setup, as package.json has it.
    const demo = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.demo as string;
    const setup = demo.slice(0, demo.indexOf(' && '));
    expect(setup).toMatch(/bash scripts\/setup\.sh$/);
    const r = spawnSync('bash', ['-c', setup], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect([r.status, r.stderr]).toEqual([0, expect.not.stringMatching(/node-llama-cpp|model/)]);
    expect(existsSync(path.join(dir, '.tools', 'llama'))).toBe(false);
    expect(existsSync(path.join(dir, '.tools', 'models'))).toBe(false);
  });
});

describe("docs/DEPLOY.md's `cdk synth`", () => {
  it('synthesizes the stack as written, offline', () => {
    const deploy = readFileSync(path.join(projectRoot(), 'docs', 'DEPLOY.md'), 'utf8');
    const commands = [...deploy.matchAll(/^(npx cdk synth\b.*)$|`(npx cdk synth\b[^`]*)`/gm)].map(
      (m) => m[1] ?? m[2] ?? '',
    );
    expect(commands.length).toBeGreaterThanOrEqual(1);
    for (const line of commands) {
      const r = spawnSync('bash', ['-c', line], {
        cwd: projectRoot(),
        env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
        encoding: 'utf8',
        timeout: 180_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      expect([line, r.status, r.stderr.match(/Error: .*/)?.[0]]).toEqual([line, 0, undefined]);
      expect(r.stdout).toMatch(/AWS::ECS::Service/);
    }
  });
});
