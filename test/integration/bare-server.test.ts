/**
 * A bare server works, or says what to run (docs/DEPLOY.md): against a plain `temporal server start-dev`
 * (no search attributes registered), `starry run` and the HTTP API's submit say what is missing and the
 * command that registers it (not Temporal's "no mapping defined"), `starry worker` registers what the
 * agents write, and a task runs; the refusal of a start where they are missing names the command.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { createApp } from '../../api/app';
import { AgentClient } from '../../client/agent-client';
import { freePort, isListening } from '../../dev/dev-server';
import { eventually } from '../../dev/poll';
import { temporalCliPath } from '../../dev/paths';
import { missingSearchAttributes, SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { bin } from '../helpers/cli';
import { makeWorkspace, privateDir, scriptedConfig, startHarness, uniqueId, writeScript } from '../helpers/harness';
import { done } from '../helpers/scenarios';
import { killWorker, startWorkerProcess } from '../helpers/worker-process';

jest.setTimeout(120_000);

let server: ChildProcess;
let address: string;

beforeAll(async () => {
  const port = await freePort();
  address = `127.0.0.1:${port}`;
  // The plain CLI, as a user starts it: no --search-attribute flags (starry's own dev server adds them).
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--ui-port',
    String(await freePort()),
  ];
  server = spawn(temporalCliPath(), [...args, '--headless', '--log-level', 'error'], {
    cwd: privateDir('starry-bare-server'),
    stdio: 'ignore',
  });
  await eventually('the bare server to listen', async () => ((await isListening(port)) ? true : undefined), 30_000);
});
afterAll(async () => {
  server?.kill('SIGTERM');
});

// Before `starry worker` registers the attributes (the next test): a worker that does not register them
// (the CLI's and the harness's embedded one) polls, and the submit's start is what Temporal refuses.
describe('before the search attributes are registered', () => {
  const all = () => missingSearchAttributes('default', Object.keys(SEARCH_ATTRIBUTES));

  it("`starry run` says what is missing and the command, not Temporal's text", async () => {
    const h = await startHarness({ name: 'bare-cli', address });
    try {
      const { STARRY_RUN_WORKER: _, ...env } = process.env;
      const child = spawn(
        process.execPath,
        [
          ...[bin, 'run', 'say done', '--agent', uniqueId('bare-cli')],
          ...['--llm', `scripted:${writeScript([done()])}`, '--workspace', makeWorkspace()],
        ],
        { env: { ...env, TEMPORAL_ADDRESS: address, STARRY_TASK_QUEUE: h.taskQueue } },
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += String(d)));
      const code = await new Promise((resolve) => child.on('exit', resolve));
      expect(stderr).toContain(`starry: ${all()}`);
      expect(code).toBe(1);
      expect(stderr).not.toMatch(/no mapping defined/);
    } finally {
      await h.stop();
    }
  });

  it('POST /v1/agents/{agentId}/tasks answers 503 problem+json with the same message', async () => {
    const h = await startHarness({ name: 'bare-api', address });
    try {
      const app = createApp({ agents: async () => h.agents, auth: undefined });
      const res = await app.request(`/v1/agents/${uniqueId('bare-api')}/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ goal: 'say done', config: scriptedConfig(writeScript([done()]), makeWorkspace()) }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(res.headers.get('retry-after')).toBeNull();
      expect(await res.json()).toMatchObject({ status: 503, detail: all() });
    } finally {
      await h.stop();
    }
  });
});

it('gets its search attributes from `starry worker`, and a task runs', async () => {
  const connection = await Connection.connect({ address });
  try {
    const before = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    expect(Object.keys(before.customAttributes ?? {})).not.toContain('AgentId');
    const taskQueue = uniqueId('tq-bare');
    const worker = await startWorkerProcess(taskQueue, address);
    try {
      const after = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
      expect(Object.keys(after.customAttributes ?? {})).toEqual(expect.arrayContaining(Object.keys(SEARCH_ATTRIBUTES)));
      const agents = new AgentClient({ connection, taskQueue });
      const agentId = uniqueId('bare');
      const { taskId } = await agents.submit(agentId, {
        goal: 'say done',
        config: scriptedConfig(writeScript([done()]), makeWorkspace()),
      });
      expect(await agents.waitForTask(agentId, taskId)).toMatchObject({ outcome: 'COMPLETED' });
    } finally {
      await killWorker(worker);
    }
  } finally {
    await connection.close();
  }
});

it('names the command that registers them, for the namespace and the names missing', () => {
  expect(missingSearchAttributes('prod', ['AgentId', 'TickIndex'])).toBe(
    'namespace prod has no search attribute AgentId, TickIndex, which the agents write: register them once ' +
      '(`temporal operator search-attribute create --namespace prod --name AgentId --type Keyword --name TickIndex --type Int`; ' +
      'on Temporal Cloud, `tcld namespace search-attributes add`, see docs/DEPLOY.md), or start `starry worker` with the right ' +
      'to register them; then try again',
  );
});
