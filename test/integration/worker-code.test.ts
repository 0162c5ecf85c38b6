/**
 * The worker never runs what a task can write (docs/ARCHITECTURE.md, "Trust boundary"). The attack
 * this replays: with no STARRY_WORKER_POLICY (what `starry dev` and the README's API example run), the
 * default roots used to include the project folder, so a task `fs.write`d the worker's own
 * `activities/llm/local-host.mjs`, and the next `local:` task made the worker fork it outside the sandbox
 * with every key of its environment; with tools on a tool worker, the key-less tool worker wrote the file
 * and the workflow worker ran it. Both forms run here against workers started from a copy of the
 * package, with fake secrets in their environment, exactly as `starry worker` starts.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentClient, RefusedError } from '../../client/agent-client';
import { projectRoot } from '../../dev/paths';
import { address, scriptedConfig, startHarness, uniqueId, type Harness } from '../helpers/harness';
import { done, turn } from '../helpers/scenarios';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

/** The worker's secrets: none may reach a task's result, its error or a file a task can read. */
const SECRETS = {
  OPENAI_API_KEY: 'sk-worker-code-attack-2f9c',
  AWS_SECRET_ACCESS_KEY: 'aws-worker-code-attack-7d1e',
  STARRY_API_JWT_SECRET: 'jwt-worker-code-attack-secret-0b4a-32chars',
};
/** The worker as a developer runs it: no policy, no roots of its own. */
const NO_POLICY = { STARRY_WORKER_POLICY: '', STARRY_WORKSPACE_ROOTS: '', ...SECRETS };

let h: Harness;
let pkg: string;
const children: ChildProcess[] = [];
let hostScript: string;

beforeAll(async () => {
  h = await startHarness({ name: 'worker-code', withWorker: false });
  // A copy of the package, as `npm install` or a checkout leaves it, whose workers this test may attack.
  pkg = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'starry-pkg-')));
  for (const part of ['lib', 'bin', 'package.json', 'activities/llm/local-host.mjs'])
    cpSync(path.join(projectRoot(), part), path.join(pkg, part), { recursive: true });
  symlinkSync(path.join(projectRoot(), 'node_modules'), path.join(pkg, 'node_modules'));
  hostScript = readFileSync(path.join(pkg, 'activities/llm/local-host.mjs'), 'utf8');
});
afterAll(async () => {
  await Promise.all(children.map(killWorker));
  await h?.stop();
});

async function worker(taskQueue: string, env: Record<string, string>, tools = false): Promise<ChildProcess> {
  const child = await startWorkerProcess(taskQueue, address(), { pkg, env: { ...NO_POLICY, ...env }, tools });
  children.push(child);
  return child;
}

/** A scripted controller in the package's folder (the default worker reads scripts there, never runs them). */
function script(turns: unknown[]): string {
  const dir = path.join(pkg, 'scripts', uniqueId('attack'));
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'turns.json'), JSON.stringify({ turns }));
  return path.join(dir, 'turns.json');
}

/** The calls that used to rewrite the model host: by a path that climbs out, and by its absolute path. */
const REWRITE = [
  turn({ name: 'fs.write', args: { path: '../../activities/llm/local-host.mjs', content: 'process.exit(7)' } }),
  turn({ name: 'fs.write', args: { path: path.join('/', 'PKG', 'activities/llm/local-host.mjs'), content: 'x' } }),
  turn({ name: 'fs.read', args: { path: '../../.temporal' } }),
  done('tried'),
];

/** Every way of naming the package folder as a task's workspace, each refused at submit. */
async function expectWorkspacesRefused(agents: AgentClient): Promise<void> {
  const sneaky = path.join(pkg, 'workspaces', uniqueId('sneaky'));
  mkdirSync(path.dirname(sneaky), { recursive: true });
  symlinkSync(path.join(pkg, 'activities'), sneaky);
  const dones = script([done()]);
  for (const [workspace, says] of [
    [pkg, `workspace: '${pkg}' is not inside a root the worker allows (${pkg}/workspaces)`],
    [path.join(pkg, 'activities'), 'is not inside a root the worker allows'],
    [path.join(pkg, 'workspaces', '..', 'lib'), 'is not inside a root the worker allows'],
    [sneaky, `workspace: '${sneaky}' resolves to ${pkg}/activities, outside every root the worker allows`],
  ] as const) {
    const submitted = agents.submit(uniqueId('attacker'), { goal: 'attack', config: scriptedConfig(dones, workspace) });
    await expect(submitted).rejects.toBeInstanceOf(RefusedError);
    await expect(submitted).rejects.toThrow(says);
  }
}

/** A task in a workspace of the default root tries to climb out to the model host: every call is refused. */
async function expectNoRewrite(agents: AgentClient): Promise<void> {
  const agentId = uniqueId('attacker');
  const workspace = path.join(pkg, 'workspaces', agentId);
  const turns = JSON.parse(JSON.stringify(REWRITE).replaceAll('/PKG', pkg)) as unknown[];
  const { taskId } = await agents.submit(agentId, {
    goal: 'rewrite the host',
    config: scriptedConfig(script(turns), workspace),
  });
  const result = await agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 });
  expect(result.outcome).toBe('COMPLETED');
  expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([
    ['fs.write', 'failed', 'EPERM'],
    ['fs.write', 'failed', 'EPERM'],
    ['fs.read', 'failed', 'EPERM'],
  ]);
  expect(readFileSync(path.join(pkg, 'activities/llm/local-host.mjs'), 'utf8')).toBe(hostScript);
  const seen = JSON.stringify(result);
  for (const [name, value] of Object.entries(SECRETS)) expect([name, seen.includes(value)]).toEqual([name, false]);
}

describe('the worker never runs what a task can write', () => {
  it('without a policy, tasks get a workspaces folder of their own, never the package and its code', async () => {
    await worker(h.taskQueue, {});
    await expectWorkspacesRefused(h.agents);
    await expectNoRewrite(h.agents);
  }, 120_000);

  it('with tools on a tool worker, the tool worker cannot write what the workflow worker runs', async () => {
    const taskQueue = uniqueId('tq-worker-code');
    const toolQueue = `${taskQueue}-tools`;
    await worker(taskQueue, { STARRY_TOOL_TASK_QUEUE: toolQueue });
    await worker(toolQueue, { STARRY_TASK_QUEUE: taskQueue }, true);
    const agents = new AgentClient({ connection: h.connection, taskQueue });
    await expectWorkspacesRefused(agents);
    await expectNoRewrite(agents);
  }, 120_000);

  it.each<[string, string[]]>([
    ['a worker', []],
    ['a tool worker', ['--tools']],
  ])('%s refuses to start on roots that hold its code or its store, naming the overlap', (_kind, args) => {
    const start = (env: Record<string, string>) =>
      spawnSync(process.execPath, [path.join(pkg, 'lib', 'workers', 'main.js'), ...args], {
        cwd: pkg,
        env: {
          ...process.env,
          ...NO_POLICY,
          OPENAI_API_KEY: '',
          STARRY_TASK_QUEUE: uniqueId('tq-refused'),
          // A worker that runs tool calls itself (a workflow worker whose tools run elsewhere uses no root).
          STARRY_TOOL_TASK_QUEUE: args.length ? uniqueId('tq-refused-tools') : '',
          ...env,
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const project = start({ STARRY_WORKSPACE_ROOTS: pkg });
    expect(project.status).toBe(1);
    expect(project.stderr).toContain(
      "this worker's workspace roots (STARRY_WORKSPACE_ROOTS) overlap what the worker itself loads, runs or keeps",
    );
    expect(project.stderr).toContain(`  - ${pkg} contains the worker's code and packages (${pkg})`);
    const ws = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'starry-ws-store-')));
    const store = start({
      STARRY_WORKER_POLICY: JSON.stringify({ roots: [ws] }),
      STARRY_STORE_DIR: path.join(ws, 'blobs'),
    });
    expect(store.status).toBe(1);
    expect(store.stderr).toContain(`  - ${ws} contains the transcript store (${ws}/blobs)`);
  });
});
