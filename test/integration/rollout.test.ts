/**
 * Rolling out a new build on a live server (docs/ARCHITECTURE.md#rolling-out-a-new-build): two builds of
 * the workflows, each a real worker process of one deployment on one task queue, and the CLI an operator
 * runs between them. Build B changes the task workflow's module in a way that leaves its commands alone;
 * build C makes a task wait on a timer before its first step, which no history of the old code holds.
 * `starry promote` replays the current version's recent histories on the build it promotes: C is refused,
 * naming the history and the event; B is ramped, then made current; the task pinned to A finishes on A,
 * its agent and an idle one move to B, and nothing is left on A.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { VersionRow } from '../../core/rollout';
import { projectRoot } from '../../dev/paths';
import { eventually } from '../../dev/poll';
import { buildIdOf } from '../../workers/versioning';
import { agentWorkflowId } from '../../workflows/messages';
import { AgentClient } from '../../client/agent-client';
import { route, routingToken } from '../../client/deployment';
import { starryAsync } from '../helpers/cli';
import {
  makeWorkspace,
  privateDir,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';
import { done } from '../helpers/scenarios';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

jest.setTimeout(300_000);

const deployment = uniqueId('dep-roll');
const queue = uniqueId('tq-roll');
const A = buildIdOf(readFileSync(process.env.STARRY_WORKFLOW_BUNDLE as string, 'utf8'));
let h: Harness;
let agents: AgentClient;
const workers: ChildProcess[] = [];
/** The bundles of builds B and C. */
let bundleB: string;
let bundleC: string;

/**
 * The package built again from a copy whose compiled task workflow module is changed by `edit`, as
 * another commit's `npm run build` would bundle it; returns the bundle's path.
 */
function changedBuild(name: string, edit: (taskModule: string) => string): string {
  const copy = path.join(privateDir(`starry-roll-${name}`), 'checkout');
  mkdirSync(copy, { recursive: true });
  for (const part of ['lib', 'package.json'])
    cpSync(path.join(projectRoot(), part), path.join(copy, part), { recursive: true });
  symlinkSync(path.join(projectRoot(), 'node_modules'), path.join(copy, 'node_modules'));
  const task = path.join(copy, 'lib', 'workflows', 'task.js');
  const before = readFileSync(task, 'utf8');
  const after = edit(before);
  if (after === before) throw new Error(`the edit of build ${name} changed nothing in lib/workflows/task.js`);
  writeFileSync(task, after);
  const out = path.join(copy, 'lib', 'workflow-bundle.js');
  const script = `
    const { writeFileSync } = require('node:fs');
    const { bundleWorkflowCode } = require('@temporalio/worker');
    const { workflowBundleOptions } = require('./lib/workers/bundle');
    const noop = () => undefined;
    const logger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: console.error };
    bundleWorkflowCode({ ...workflowBundleOptions(), logger }).then(({ code }) => writeFileSync(${JSON.stringify(out)}, code));`;
  execFileSync(process.execPath, ['-e', script], { cwd: copy, stdio: ['ignore', 'ignore', 'inherit'] });
  return out;
}

const env = (bundle?: string) => ({
  STARRY_DEPLOYMENT_NAME: deployment,
  ...(bundle ? { STARRY_WORKFLOW_BUNDLE: bundle } : {}),
});

async function worker(bundle?: string): Promise<ChildProcess> {
  const w = await startWorkerProcess(queue, undefined, { env: env(bundle) });
  workers.push(w);
  return w;
}

/** `starry <args>` as the operator runs it, against this file's deployment. */
const starry = (args: string[], bundle?: string) => starryAsync(args, queue, env(bundle));

async function versions(): Promise<VersionRow[]> {
  const r = await starry(['versions', '--json']);
  expect(r).toMatchObject({ code: 0 });
  return (JSON.parse(r.stdout) as { versions: VersionRow[] }).versions;
}

async function buildOf(workflowId: string): Promise<string | undefined> {
  const d = await h.agents.client.workflow.getHandle(workflowId).describe();
  return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ?? undefined;
}

beforeAll(async () => {
  h = await startHarness({ name: 'rollout', withWorker: false });
  agents = new AgentClient({ connection: h.connection, taskQueue: queue });
  // B: the task module gains an export the workflow never reads: new code, the same commands.
  bundleB = changedBuild('b', (js) => `${js}\nexports.rolloutNote = 'build b';\n`);
  // C: a task waits 1 ms on a timer before its first step.
  bundleC = changedBuild('c', (js) =>
    js.replace(
      'async function taskWorkflow(input) {',
      'async function taskWorkflow(input) {\n    await (0, workflow_1.sleep)(1);',
    ),
  );
});
afterAll(async () => {
  for (const w of workers) await killWorker(w);
  await h?.stop();
});

it('promotes a build whose code replays the current version’s histories, refuses one that does not, and strands nothing', async () => {
  // Build A, the deployment's first version, current once it polls.
  await worker();
  const workspace = makeWorkspace();
  const idle = uniqueId('idle');
  const first = await agents.submit(idle, { goal: 'hi', config: scriptedConfig(writeScript([done()]), workspace) });
  await agents.waitForTask(idle, first.taskId);
  // A task that is still running on A when the new build takes over.
  const busy = uniqueId('busy');
  const slow = writeScript([{ ...done('slow'), delayMs: 40_000 }]);
  const running = await agents.submit(busy, { goal: 'slow', config: scriptedConfig(slow, workspace) });

  const B = buildIdOf(readFileSync(bundleB, 'utf8'));
  const C = buildIdOf(readFileSync(bundleC, 'utf8'));
  expect(new Set([A, B, C]).size).toBe(3);

  // Bad input says what was wrong, and changes nothing.
  expect(await starry(['promote', '--ramp', '150'])).toMatchObject({
    code: 64,
    stderr: expect.stringContaining('--ramp must be a percentage from 0 to 100'),
  });
  expect(await starry(['promote', '0.1.0-000000000000'])).toMatchObject({
    code: 1,
    stderr: expect.stringContaining(`deployment ${deployment} has no version 0.1.0-000000000000 (its versions: ${A})`),
  });

  // C's workers join; the gate replays A's recent histories on C's code and refuses it.
  const workerC = await worker(bundleC);
  const refused = await starry(['promote', '--bundle', bundleC]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(
    new RegExp(
      `FAILED  ${agentWorkflowId(idle)}-task-1 run [0-9a-f-]{36} \\(taskWorkflow, \\d+ events\\): nondeterministic at event #\\d+ \\w+`,
    ),
  );
  expect(refused.stderr).toMatch(
    new RegExp(`promotion of ${C} refused: \\d+ histor(y|ies) of the current version ${A} (does|do) not replay`),
  );
  expect(refused.stderr).toMatch(new RegExp(`${agentWorkflowId(idle)}-task-1 run [0-9a-f-]{36} at event #\\d+ \\w+`));
  // The same gate alone, from the CLI: C fails, A's own code passes.
  expect(await starry(['replay', '--recent', '5', '--bundle', bundleC])).toMatchObject({ code: 1 });
  expect(await starry(['replay', '--recent', '5'])).toMatchObject({
    code: 0,
    stdout: expect.stringContaining(`replay ok: the recent histories of version ${A} replay on build ${A}`),
  });
  // A version nobody serves is refused before its gate.
  await killWorker(workerC);
  expect(await starry(['promote', '--bundle', bundleC])).toMatchObject({
    code: 1,
    stderr: expect.stringContaining(`version ${C} has no worker polling`),
  });

  // B's workers join. `starry versions` shows A current with the running task, B inactive, both served.
  await worker(bundleB);
  const seen = await eventually('A with its open task in `starry versions`', async () => {
    const rows = await versions();
    const a = rows.find((r) => r.buildId === A);
    return a?.open.taskWorkflow === 1 && rows.find((r) => r.buildId === B)?.pollers ? rows : undefined;
  });
  expect(seen.find((r) => r.buildId === A)).toMatchObject({
    status: 'current',
    pollers: 1,
    open: { agentWorkflow: 2 },
  });
  expect(seen.find((r) => r.buildId === B)).toMatchObject({ status: 'inactive', pollers: 1 });

  // Ramp first, then make current: each passes the gate.
  expect(await starry(['promote', '--ramp', '25', '--bundle', bundleB])).toMatchObject({
    code: 0,
    stdout: expect.stringContaining(`${B} is ramping: it gets 25% of new agents and tasks`),
  });
  expect((await versions()).find((r) => r.buildId === B)).toMatchObject({ status: 'ramping', rampPercentage: 25 });
  const promoted = await starry(['promote', '--bundle', bundleB]);
  expect(promoted).toMatchObject({
    code: 0,
    stdout: expect.stringContaining(`${B} is the current version of deployment ${deployment} (was ${A})`),
  });

  // The running task finishes where it started; both agents move to B; B takes the next task.
  expect(await agents.waitForTask(busy, running.taskId)).toMatchObject({ outcome: 'COMPLETED' });
  expect(await buildOf(running.workflowId)).toBe(A);
  for (const id of [busy, idle])
    await eventually(`agent ${id} on ${B}`, async () =>
      (await buildOf(agentWorkflowId(id))) === B ? true : undefined,
    );
  const next = await agents.submitExisting(idle, {
    goal: 'again',
    config: scriptedConfig(writeScript([done()]), workspace),
  });
  expect(await agents.waitForTask(idle, next.taskId)).toMatchObject({ outcome: 'COMPLETED' });
  expect(await buildOf(next.workflowId)).toBe(B);

  // Nothing is stranded on A: it drains, and `starry versions` says its workers may stop.
  const after = await eventually('nothing open on A', async () => {
    const rows = await versions();
    const a = rows.find((r) => r.buildId === A);
    return a && a.open.agentWorkflow + a.open.taskWorkflow === 0 ? rows : undefined;
  });
  expect(after.find((r) => r.buildId === B)).toMatchObject({ status: 'current', open: { agentWorkflow: 2 } });
  expect(['draining', 'drained']).toContain(after.find((r) => r.buildId === A)?.status);
  const table = await starry(['versions']);
  expect(table.stdout).toContain(`nothing runs on ${A}: its workers may stop`);

  // A promotion read before another changed the routing changes nothing (what `promote` reads before its gate).
  const stale = await routingToken(h.connection, 'default', deployment);
  await route(h.connection, 'default', deployment, A, { ramp: 10 });
  const late = await route(h.connection, 'default', deployment, A, { ramp: 50, conflictToken: stale }).then(
    () => 'accepted',
    (err: { code?: number }) => err.code,
  );
  expect([9, 10]).toContain(late);
  expect((await versions()).find((r) => r.buildId === A)).toMatchObject({ status: 'ramping', rampPercentage: 10 });
});
