/**
 * A worker's own guide and context strategy from a plugin module (docs/LIBRARY.md#plugins), through real
 * workflows: the worker bundles the module into its workflow code at start, a task naming the guide gets
 * its system prompt and its reading of a failure on the wire, one naming the strategy gets its windows, a guide the worker lacks is refused at submit with the list of what
 * it has, and a worker whose plugin module is missing does not start.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import {
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
  address,
} from '../helpers/harness';
import { done, read, turn } from '../helpers/scenarios';
import { llmRequests, settledHistory } from '../helpers/workflow-history';
import { createWorker, type VersionedWorker } from '../../workers/worker';
import { buildIdOf } from '../../workers/versioning';
import { ConfigError } from '../../core/errors';
import { projectRoot } from '../../dev/paths';

const CAUTIOUS = path.resolve(__dirname, '..', 'fixtures', 'plugins', 'cautious.js');

let h: Harness;
beforeAll(async () => {
  // A deployment of its own: its version (the plugin code makes another build id) takes that one over,
  // not the deployment the other test files' workers share, whose current version must stay theirs.
  h = await startHarness({ name: 'plugins', plugins: [CAUTIOUS], versioning: { deploymentName: uniqueId('plugins') } });
});
afterAll(async () => h?.stop());

const textOf = (m: { role: string } | undefined) => (m && 'text' in m ? String(m.text) : '');

it('runs a task with the plugin’s guide: its system prompt and its reading of a failure reach the model', async () => {
  const agentId = uniqueId('cautious');
  const ws = makeWorkspace({ 'notes.md': 'n\n' });
  const script = () => writeScript([turn(read('missing.md')), done('Checked.')]);
  const config = scriptedConfig(script(), ws, { guide: 'cautious' });
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Read missing.md.', config });
  const result = await h.agents.waitForTask(agentId, taskId);
  expect(result).toMatchObject({ outcome: 'COMPLETED', finalText: 'Checked.' });
  expect(result.toolCalls.map((c) => [c.name, c.status, c.error?.code])).toEqual([['fs.read', 'failed', 'ENOENT']]);

  const [first, second] = await llmRequests(await settledHistory(h.agents.client, workflowId));
  const system = textOf(first?.messages[0]);
  expect(system).toMatch(/^You are a cautious agent \(the cautious guide\): you check before you act\.\n/);
  expect(system).toContain('It comes back as a CAREFUL NOTE.');
  const pain = second?.messages.filter((m) => m.role === 'tool').map(textOf);
  expect(pain).toEqual([
    expect.stringMatching(/^CAREFUL NOTE #1: Tool fs\.read failed: ENOENT: .* Check the path before you act again\.$/),
  ]);

  // The next task's workflow evaluates the bundle afresh and registers the plugin again: it runs the same.
  const again = await h.agents.submit(agentId, {
    goal: 'Read missing.md again.',
    config: scriptedConfig(script(), ws, { guide: 'cautious' }),
  });
  expect(await h.agents.waitForTask(agentId, again.taskId)).toMatchObject({ outcome: 'COMPLETED' });
});

it('runs a task with the plugin’s context strategy: each request holds the head and the newest turn only', async () => {
  const agentId = uniqueId('latest');
  const ws = makeWorkspace({ 'a.md': 'alpha\n', 'b.md': 'beta\n' });
  const config = scriptedConfig(writeScript([turn(read('a.md')), turn(read('b.md')), done('Both read.')]), ws, {
    context: { strategy: 'latest-turn' },
  });
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: 'Read a.md, then b.md.', config });
  expect(await h.agents.waitForTask(agentId, taskId)).toMatchObject({ outcome: 'COMPLETED', finalText: 'Both read.' });

  const requests = await llmRequests(await settledHistory(h.agents.client, workflowId));
  const roles = requests.map((r) => r.messages.map((m) => m.role));
  // The default strategy (prefix) would send the whole transcript: 2, 4, then 6 messages.
  expect(roles).toEqual([
    ['system', 'user'],
    ['system', 'user', 'assistant', 'tool'],
    ['system', 'user', 'assistant', 'tool'],
  ]);
  const lastTool = requests[2]!.messages.filter((m) => m.role === 'tool').map(textOf);
  expect(lastTool).toEqual([expect.stringContaining('beta')]);
});

it('refuses at submit a guide and a context strategy the worker does not have, listing the ones it has', async () => {
  const agentId = uniqueId('zen');
  const config = scriptedConfig(writeScript([done()]), makeWorkspace(), {
    guide: 'zen',
    context: { strategy: 'lossy' },
  });
  await expect(h.agents.submit(agentId, { goal: 'g', config })).rejects.toMatchObject({
    name: 'Refused',
    message: expect.stringContaining(
      'guide "zen" is not on this worker: it has pain, safety, learning, debugging, neutral, cautious; context strategy "lossy" is not on this worker: it has prefix, window, summarize, latest-turn. A worker adds guides',
    ),
  });
});

it('runs as a Worker Deployment Version of its own: the plugin code is in its workflow bundle', () => {
  const plain = buildIdOf(readFileSync(process.env.STARRY_WORKFLOW_BUNDLE!, 'utf8'));
  expect((h.worker as VersionedWorker).version.buildId).not.toBe(plain);
});

it('does not start with a plugin module that is missing, naming it', async () => {
  const connection = await NativeConnection.connect({ address: address() });
  try {
    const started = createWorker({ connection, taskQueue: uniqueId('tq-no-plugin'), plugins: ['/no/such/plugin.js'] });
    await expect(started).rejects.toThrow(ConfigError);
    await expect(started).rejects.toThrow('plugin module "/no/such/plugin.js" cannot be found');
  } finally {
    await connection.close();
  }
});

it('`starry worker` with STARRY_PLUGINS naming a missing module exits at start, naming it', () => {
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address(), STARRY_PLUGINS: './no-such-plugin.js' };
  delete env.STARRY_WORKFLOW_BUNDLE;
  const r = spawnSync(process.execPath, [path.join(projectRoot(), 'bin', 'starry.js'), 'worker'], {
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status).not.toBe(0);
  expect(r.stderr).toContain(`plugin module "./no-such-plugin.js" cannot be found (from ${process.cwd()})`);
});
