/**
 * The adversarial suite's attacks on the worker's own code and on the tenants' files (issue 52): run by
 * bench/adversarial.ts with the rest, judged the same way (no secret reaches the attacker, nothing
 * outside changes) plus what each attempt expects.
 *
 * The worker-code attacks need workers as a developer starts them — no STARRY_WORKER_POLICY — so they
 * start their own, as processes, from a copy of the package in the suite's folder (the attack rewrites
 * the package's files when it gets through), with the suite's fake secrets in their environment.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { AgentClient } from '../client/agent-client';
import { parseTaskConfig } from '../core/config';
import { projectRoot } from '../dev/paths';
import type { Attempt, Ctx } from './adversarial';

export const trustAttempts: Attempt[] = [];
const attempt = (category: string, name: string, run: Attempt['run']) => trustAttempts.push({ category, name, run });

// ---- the worker's own code: no task writes what the worker runs -----------------------------------------

/** The file the original attack rewrote: the local model host, which a `local:` task makes the worker fork. */
const HOST = 'activities/llm/local-host.mjs';

/** No telemetry in the workers the attempts start: other attempts set the suite's OTEL_* (a Prometheus port). */
const QUIET = { OTEL_SDK_DISABLED: 'true' };

interface DefaultWorkers {
  pkg: string;
  agents: AgentClient;
}

const started = new Map<string, Promise<DefaultWorkers>>();

/**
 * A copy of the package and workers started from it with no policy (`tools`: a workflow worker plus a
 * key-less tool worker, as `starry dev --tool-worker` runs them), once per suite run.
 */
function defaultWorkers(c: Ctx, tools: boolean): Promise<DefaultWorkers> {
  const key = `${c.base} ${tools}`;
  let workers = started.get(key);
  if (!workers) started.set(key, (workers = startDefaultWorkers(c, tools)));
  return workers;
}

async function startDefaultWorkers(c: Ctx, tools: boolean): Promise<DefaultWorkers> {
  const pkg = copyPackage(path.join(c.base, tools ? 'pkg-tools' : 'pkg'));
  const queue = `adv-default-${tools ? 'tools-' : ''}${process.pid}`;
  const env = { STARRY_WORKER_POLICY: '', STARRY_WORKSPACE_ROOTS: '', STARRY_TASK_QUEUE: queue };
  if (tools) {
    await startWorker(c, pkg, [], { ...env, STARRY_TOOL_TASK_QUEUE: `${queue}-tools` });
    // The tool worker holds no LLM key, as `starry dev --tool-worker` starts it.
    await startWorker(c, pkg, ['--tools'], { ...env, STARRY_TOOL_TASK_QUEUE: `${queue}-tools`, OPENAI_API_KEY: '' });
  } else await startWorker(c, pkg, [], env);
  const connection = await Connection.connect({ address: c.address });
  c.onStop(() => connection.close());
  return { pkg, agents: new AgentClient({ connection, taskQueue: queue }) };
}

function copyPackage(to: string): string {
  for (const part of ['lib', 'bin', 'package.json', HOST])
    cpSync(path.join(projectRoot(), part), path.join(to, part), { recursive: true });
  symlinkSync(path.join(projectRoot(), 'node_modules'), path.join(to, 'node_modules'));
  return to;
}

/** `node <pkg>/lib/workers/main.js` with the suite's environment (its fake secrets) and `env`; resolves once ready. */
function startWorker(c: Ctx, pkg: string, args: string[], env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(pkg, 'lib', 'workers', 'main.js'), ...args], {
    cwd: pkg,
    env: { ...process.env, ...QUIET, TEMPORAL_ADDRESS: c.address, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  c.onStop(async () => {
    child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let said = '';
    const read = (d: Buffer) => {
      said += String(d);
      if (said.includes('worker ready')) resolve(child);
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('exit', (code) => reject(new Error(`a default worker exited (${code}): ${said.slice(-500)}`)));
  });
}

/**
 * Submit `calls` in `workspace` to the default workers and wait: why the attempt got through (the model
 * host changed, or a secret came back), or undefined when it was refused or its calls failed.
 */
async function rewriteHost(c: Ctx, tools: boolean, workspace: (pkg: string) => string): Promise<string | undefined> {
  const { pkg, agents } = await defaultWorkers(c, tools);
  const before = readFileSync(path.join(pkg, HOST), 'utf8');
  const agentId = c.agentId();
  // Each attempt writes its own content, so one that gets through is seen after another did.
  const content = `process.exit(7) // ${agentId}`;
  const calls = [
    ['fs_write', { path: HOST, content }],
    ['fs_write', { path: path.join(pkg, HOST), content }],
    ['fs_write', { path: `../../${HOST}`, content }],
  ];
  const config = parseTaskConfig({ workspace: [workspace(pkg)], verify: false }, c.model);
  let shown: string;
  try {
    const { taskId } = await agents.submit(agentId, { goal: `ATTACK ${JSON.stringify(calls)}`, config });
    shown = JSON.stringify(await agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 }));
  } catch (err) {
    shown = (err as Error).message;
    if (!/wider than the worker's policy/.test(shown)) return `not refused as the policy: ${shown.slice(0, 300)}`;
  }
  if (readFileSync(path.join(pkg, HOST), 'utf8') !== before) return `the task rewrote ${HOST}, which the worker forks`;
  return /sk-adversarial|aws-adversarial|jwt-adversarial/.test(shown) ? 'a secret came back' : undefined;
}

for (const tools of [false, true]) {
  const form = tools ? 'with a tool worker' : 'one worker';
  attempt('worker-code', `no policy, ${form}: the package folder as the workspace`, (c) =>
    rewriteHost(c, tools, (pkg) => pkg),
  );
  attempt('worker-code', `no policy, ${form}: a workspace that climbs out of workspaces/`, (c) =>
    rewriteHost(c, tools, (pkg) => path.join(pkg, 'workspaces', '..')),
  );
  attempt('worker-code', `no policy, ${form}: a symlink from workspaces/ to the package`, (c) =>
    rewriteHost(c, tools, (pkg) => {
      const link = path.join(pkg, 'workspaces', `link-${c.agentId()}`);
      mkdirSync(path.dirname(link), { recursive: true });
      symlinkSync(pkg, link);
      return link;
    }),
  );
  attempt('worker-code', `no policy, ${form}: a workspace of its own, writing out of it`, (c) =>
    rewriteHost(c, tools, (pkg) => path.join(pkg, 'workspaces', c.agentId())),
  );
}

/**
 * Start a worker from the project with `env`: why it started when it should have refused, or undefined.
 * Asynchronous: the suite's worker runs in this process, and a synchronous child would stop it meanwhile.
 */
function refusesToStart(
  c: Ctx,
  args: string[],
  env: Record<string, string>,
  says: RegExp,
): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(projectRoot(), 'lib', 'workers', 'main.js'), ...args],
      {
        env: {
          ...process.env,
          ...QUIET,
          TEMPORAL_ADDRESS: c.address,
          STARRY_TASK_QUEUE: `adv-refused-${process.pid}`,
          ...env,
        },
        encoding: 'utf8',
        timeout: 20_000,
      },
      (err, _stdout, stderr) =>
        resolve(err && says.test(stderr) ? undefined : `it started, or said otherwise: ${stderr.slice(-300)}`),
    );
  });
}
const ws = (c: Ctx) => {
  const dir = path.join(c.base, 'roots');
  mkdirSync(dir, { recursive: true });
  return dir;
};
attempt('worker-code', 'a worker whose roots hold its code', (c) =>
  refusesToStart(
    c,
    [],
    { STARRY_WORKER_POLICY: '', STARRY_WORKSPACE_ROOTS: projectRoot() },
    /contains the worker's code/,
  ),
);
attempt('worker-code', 'a worker whose roots hold its transcript store', (c) =>
  refusesToStart(
    c,
    [],
    { STARRY_WORKER_POLICY: JSON.stringify({ roots: [ws(c)] }), STARRY_STORE_DIR: path.join(ws(c), 'blobs') },
    /contains the transcript store/,
  ),
);
attempt('worker-code', 'a tool worker whose roots hold its call journal', (c) =>
  refusesToStart(
    c,
    ['--tools'],
    {
      STARRY_WORKER_POLICY: JSON.stringify({ roots: [ws(c)], journalDir: path.join(ws(c), '.journal') }),
      STARRY_TOOL_TASK_QUEUE: `adv-refused-tools-${process.pid}`,
      OPENAI_API_KEY: '',
    },
    /contains the tool call journal/,
  ),
);
attempt('worker-code', 'a worker whose roots hold its policy file', (c) => {
  const file = path.join(ws(c), 'policy.json');
  writeFileSync(file, JSON.stringify({ roots: [ws(c)] }));
  return refusesToStart(c, [], { STARRY_WORKER_POLICY: file }, /contains its policy \(STARRY_WORKER_POLICY\)/);
});

// ---- tenants' files: a tenant's tasks use its part of the roots only ----------------------------------

/** A task of tenant t2 (the attacker) with this workspace and llm, as the API takes it: the answer. */
function asT2(c: Ctx, workspace: string, llm = c.model, goal = 'ATTACK []') {
  return c.api('POST', `/v1/agents/${c.agentId()}/tasks?wait=30`, {
    tenant: 't2',
    body: { goal, llm, config: { workspace: [workspace], verify: false, tools: { shellAllow: ['ls', 'sh'] } } },
  });
}
/** Tenant t1's workspace with its notes: the victim. */
function t1Workspace(c: Ctx): string {
  const dir = path.join(c.space('t1'), `notes-${c.agentId()}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'notes.md'), 'OUTSIDE-adversarial-77aa t1 notes');
  return dir;
}
const refusedWorkspace = (a: { status: number; text: string }) =>
  a.status === 409 && /is not inside tenant t2's part of the roots|outside tenant t2's part of the roots/.test(a.text)
    ? undefined
    : `HTTP ${a.status}: ${a.text.slice(0, 300)}`;

attempt('tenant-files', "another tenant's workspace as the workspace", async (c) =>
  refusedWorkspace(await asT2(c, t1Workspace(c))),
);
attempt('tenant-files', 'the root itself as the workspace', async (c) => refusedWorkspace(await asT2(c, c.root)));
attempt('tenant-files', 'a workspace of the root outside any tenant', async (c) => {
  const dir = path.join(c.root, `plain-${c.agentId()}`);
  mkdirSync(dir);
  return refusedWorkspace(await asT2(c, dir));
});
attempt('tenant-files', "another tenant's script as the controller", async (c) => {
  const script = path.join(t1Workspace(c), 'turns.json');
  writeFileSync(script, JSON.stringify({ turns: [{ text: 'OUTSIDE-adversarial-77aa' }] }));
  const a = await asT2(c, c.space('t2'), `scripted:${script}`);
  return a.status === 409 && /- llm: the script/.test(a.text) ? undefined : `HTTP ${a.status}: ${a.text.slice(0, 300)}`;
});
attempt('tenant-files', "a symlink in its own part to another tenant's workspace, then named", async (c) => {
  const link = path.join(c.space('t2'), `link-${c.agentId()}`);
  symlinkSync(t1Workspace(c), link);
  return refusedWorkspace(await asT2(c, link));
});
attempt('tenant-files', "a path that climbs from its own part into another tenant's", async (c) => {
  const victim = t1Workspace(c);
  const own = path.join(c.space('t2'), `ws-${c.agentId()}`);
  mkdirSync(own);
  const calls = [['fs_read', { path: `../../t1/${path.basename(victim)}/notes.md` }]];
  const a = await asT2(c, own, c.model, `ATTACK ${JSON.stringify(calls)}`);
  return a.status === 200 && /"code":"EPERM"/.test(a.text) ? undefined : `HTTP ${a.status}: ${a.text.slice(0, 300)}`;
});
attempt('tenant-files', "a shell in its own part that plants a file in another tenant's", async (c) => {
  const victim = t1Workspace(c);
  const own = path.join(c.space('t2'), `ws-${c.agentId()}`);
  mkdirSync(own);
  const calls = [['shell_run', { command: 'sh', args: ['-c', `echo planted > ${victim}/planted.md`] }]];
  await asT2(c, own, c.model, `ATTACK ${JSON.stringify(calls)}`);
  return existsSync(path.join(victim, 'planted.md')) ? "a file appeared in t1's workspace" : undefined;
});
