/**
 * A bare server works, or says what to run (docs/DEPLOY.md): against a plain `temporal server start-dev`
 * (no search attributes registered), `starry worker` registers what the agents write, and a task runs;
 * the refusal of a start where they are missing names the command that registers them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { AgentClient } from '../../client/agent-client';
import { freePort, isListening } from '../../dev/dev-server';
import { eventually } from '../../dev/poll';
import { temporalCliPath } from '../../dev/paths';
import { missingSearchAttributes, SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { makeWorkspace, privateDir, scriptedConfig, uniqueId, writeScript } from '../helpers/harness';
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
