/**
 * Workspaces of tool workers (`starry worker --tools`): a worker that runs tool calls refuses to start on
 * a root it cannot use; a task whose workspace lies outside the tool worker's roots is refused at submit;
 * a missing workspace under a root is created by the task's first call; and a tool worker SIGKILLed
 * mid-call loses no file: its successor on the same directory (on AWS, the shared EFS mount) retries the
 * call and the task reads what it wrote before.
 */
import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentClient } from '../../client/agent-client';
import { projectRoot } from '../../dev/paths';
import { until } from '../../dev/poll';
import { toolWorkerEnv } from '../../dev/tool-worker';
import { address, scriptedConfig, startHarness, uniqueId, writeScript, type Harness } from '../helpers/harness';
import { done, turn } from '../helpers/scenarios';
import { historyOf, llmRequests, type TracedEvent } from '../helpers/workflow-history';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

/** How long the in-flight shell command sleeps: a marker no other process on the machine uses. */
const SLEEP = '4.37';

let h: Harness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Client only: the workers are processes of their own.
  h = await startHarness({ name: 'toolws', withWorker: false });
});
afterAll(async () => {
  await Promise.all(children.map(killWorker));
  await h?.stop();
});

/** A directory standing for the tool workers' shared mount (on AWS, the stack's EFS at /workspaces). */
const sharedRoot = () => mkdtempSync(path.join(os.tmpdir(), 'starry-efs-'));

/** A tool worker whose only root is `root` (scripts may be read from the run's temp folder). */
async function startToolWorker(toolQueue: string, taskQueue: string, root: string): Promise<ChildProcess> {
  const policy = { roots: [root], llmDirs: [os.tmpdir()] };
  const child = await startWorkerProcess(toolQueue, address(), {
    tools: true,
    env: { STARRY_TASK_QUEUE: taskQueue, STARRY_WORKER_POLICY: JSON.stringify(policy) },
  });
  children.push(child);
  return child;
}

/** A workflow worker on `taskQueue` whose tools run on `<taskQueue>-tools`, and a tool worker there on `root`. */
async function startPair(taskQueue: string, root: string): Promise<{ tools: ChildProcess; toolQueue: string }> {
  const toolQueue = `${taskQueue}-tools`;
  children.push(await startWorkerProcess(taskQueue, address(), { env: { STARRY_TOOL_TASK_QUEUE: toolQueue } }));
  return { tools: await startToolWorker(toolQueue, taskQueue, root), toolQueue };
}

/** `starry worker [args]` with roots that cannot be used, as a process; what it exits with and says. */
function starryWorker(args: string[], env: Record<string, string>): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [path.join(projectRoot(), 'bin', 'starry.js'), 'worker', ...args], {
    // No policy of the test run's: the roots come from STARRY_WORKSPACE_ROOTS.
    env: toolWorkerEnv(process.env, { TEMPORAL_ADDRESS: address(), STARRY_WORKER_POLICY: '', ...env }),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stderr: run.stderr };
}

function pgrep(pattern: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** The completed tool activities of a history: their attempt and the worker identity that ran them. */
function toolAttempts(events: TracedEvent[]): { attempt: number; by: string }[] {
  const tool = new Set<string>();
  const started = new Map<string, { attempt: number; by: string }>();
  const out: { attempt: number; by: string }[] = [];
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === 'tool') tool.add(String(e.eventId));
    const st = e.activityTaskStartedEventAttributes;
    if (st) started.set(String(e.eventId), { attempt: st.attempt ?? 0, by: st.identity ?? '' });
    const c = e.activityTaskCompletedEventAttributes;
    if (c && tool.has(String(c.scheduledEventId))) out.push(started.get(String(c.startedEventId))!);
  }
  return out;
}

describe('the roots of a worker that runs tool calls', () => {
  it('`starry worker --tools` refuses to start on a root that does not exist, naming it and what to do', () => {
    const missing = path.join(sharedRoot(), 'workspaces');
    const run = starryWorker(['--tools'], {
      STARRY_TOOL_TASK_QUEUE: uniqueId('tq-noroot'),
      STARRY_WORKSPACE_ROOTS: missing,
    });
    expect(run.status).toBe(64);
    expect(run.stderr).toContain(`(STARRY_WORKSPACE_ROOTS) cannot be used:\n  - ${missing}: does not exist`);
    expect(run.stderr).toMatch(/Mount the workspaces' file system there .* or set STARRY_WORKSPACE_ROOTS/);
    expect(run.stderr).not.toContain('ready');
  });

  it('`starry worker` that runs the tools itself refuses a root that is a file', () => {
    const file = path.join(sharedRoot(), 'not-a-dir');
    writeFileSync(file, '');
    const run = starryWorker([], { STARRY_TASK_QUEUE: uniqueId('tq-noroot'), STARRY_WORKSPACE_ROOTS: file });
    expect(run.status).toBe(64);
    expect(run.stderr).toContain(`  - ${file}: is not a directory`);
  });

  it('a workflow worker whose tools run on tool workers starts without checking roots it does not use', async () => {
    const taskQueue = uniqueId('tq-wfonly');
    const worker = await startWorkerProcess(taskQueue, address(), {
      env: {
        STARRY_TOOL_TASK_QUEUE: `${taskQueue}-tools`,
        STARRY_WORKER_POLICY: '',
        STARRY_WORKSPACE_ROOTS: path.join(sharedRoot(), 'workspaces'),
      },
    });
    children.push(worker);
    expect(worker.exitCode).toBeNull();
    await killWorker(worker);
  }, 60_000);
});

describe("a task's workspace on tool workers", () => {
  it("is refused at submit outside the tool worker's roots, naming them; under a root a missing one is created by the first call", async () => {
    const taskQueue = uniqueId('tq-wsroot');
    const root = sharedRoot();
    await startPair(taskQueue, root);
    const agents = new AgentClient({ connection: h.connection, taskQueue });

    // The workflow worker's own roots allow it; the tool worker's do not.
    const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'starry-ws-'));
    await expect(
      agents.submit(uniqueId('toolws'), {
        goal: 'list the workspace',
        config: scriptedConfig(writeScript([done()]), elsewhere),
      }),
    ).rejects.toThrow(`workspace: '${elsewhere}' is not inside a root the worker allows (${root})`);

    const workspace = path.join(root, 'agent-new');
    const agentId = uniqueId('toolws');
    const { taskId } = await agents.submit(agentId, {
      goal: 'write a file in a new workspace',
      config: scriptedConfig(
        writeScript([turn({ name: 'fs.write', args: { path: 'a.txt', content: 'new' } }), done()]),
        workspace,
      ),
    });
    const result = await agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 });
    expect(result.outcome).toBe('COMPLETED');
    expect(readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('new');
  }, 120_000);

  it('loses no file when its tool worker is SIGKILLed mid-call: another on the same directory retries the call', async () => {
    const taskQueue = uniqueId('tq-wskill');
    const root = sharedRoot();
    const { tools, toolQueue } = await startPair(taskQueue, root);
    const agents = new AgentClient({ connection: h.connection, taskQueue });
    const workspace = path.join(root, 'agent-1');
    const script = writeScript([
      turn({ name: 'fs.write', args: { path: 'notes.txt', content: 'written before the kill' } }),
      turn({ name: 'shell.run', args: { command: 'sleep', args: [SLEEP] } }),
      turn({ name: 'fs.read', args: { path: 'notes.txt' } }),
      done('read it back'),
    ]);
    const agentId = uniqueId('toolws-kill');
    const { taskId, workflowId } = await agents.submit(agentId, {
      goal: 'write, run something slow, read',
      config: scriptedConfig(script, workspace),
    });
    await until('the shell command to run on the tool worker', () => pgrep(`sleep ${SLEEP}`).length > 0, 60_000);
    await killWorker(tools);
    const successor = await startToolWorker(toolQueue, taskQueue, root);

    const result = await agents.waitForTask(agentId, taskId, { timeoutMs: 120_000 });
    expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'read it back' });
    expect(result.toolCalls.map((c) => [c.name, c.status])).toEqual([
      ['fs.write', 'ok'],
      ['shell.run', 'ok'],
      ['fs.read', 'ok'],
    ]);
    const events = await historyOf(agents.client, workflowId);
    // The write ran on the killed worker; the shell call's second attempt and the read on its successor.
    expect(toolAttempts(events)).toEqual([
      { attempt: 1, by: expect.stringMatching(new RegExp(`^${tools.pid}@`)) },
      { attempt: 2, by: expect.stringMatching(new RegExp(`^${successor.pid}@`)) },
      { attempt: 1, by: expect.stringMatching(new RegExp(`^${successor.pid}@`)) },
    ]);
    // What the read returned, as the last LLM call was sent it.
    const sent = await llmRequests({ events });
    expect(JSON.stringify(sent.at(-1)?.messages.at(-1))).toContain('written before the kill');
    expect(existsSync(path.join(workspace, 'notes.txt'))).toBe(true);
  }, 180_000);
});
