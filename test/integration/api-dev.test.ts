/**
 * The HTTP API without authentication (`starry dev`, `starry api --insecure-dev`), as its host serves it
 * (api/serve.ts on a free loopback port, its own Temporal connection) against the real dev server and a
 * real worker: a web page cannot halt an agent (a cross-site bodyless POST) nor read the API through a
 * name of its own that resolves to 127.0.0.1 (DNS rebinding); a program's same-origin JSON halt works.
 */
import http from 'node:http';
import { serveApi, type LocalApi } from '../../api/serve';
import { eventually } from '../../dev/poll';
import {
  address,
  makeWorkspace,
  scriptedConfig,
  startHarness,
  uniqueId,
  writeScript,
  type Harness,
} from '../helpers/harness';

jest.setTimeout(120_000);

let h: Harness;
let api: LocalApi;
let port: number;
beforeAll(async () => {
  h = await startHarness({ name: 'api-dev' });
  api = await serveApi({
    port: 0,
    insecureDev: true,
    env: { TEMPORAL_ADDRESS: address(), STARRY_TASK_QUEUE: h.taskQueue },
  });
  port = Number(new URL(api.url).port);
});
afterAll(async () => {
  await api?.close();
  await h?.stop();
});

/** A request with exactly these headers (`host` too, which fetch would not let a test set), as a browser sends it. */
function request(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; type: string; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            type: res.headers['content-type'] ?? '',
            json: JSON.parse(text) as Record<string, unknown>,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
const JSON_BODY = { 'content-type': 'application/json' };
const stateOf = async (agentId: string) => (await request('GET', `/v1/agents/${agentId}`)).json.agentState;

/** An agent whose task waits 30 s on its model: EXECUTING until something halts it. */
async function busyAgent(): Promise<string> {
  const agentId = uniqueId('dev-api');
  const config = scriptedConfig(writeScript([{ delayMs: 30_000, text: 'slow' }]), makeWorkspace());
  const submitted = await request(
    'POST',
    `/v1/agents/${agentId}/tasks`,
    JSON_BODY,
    JSON.stringify({ goal: 'Wait.', config }),
  );
  expect(submitted.status).toBe(202);
  await eventually(`${agentId} executing`, async () => ((await stateOf(agentId)) === 'EXECUTING' ? true : undefined));
  return agentId;
}

it("refuses a cross-site page's bodyless halt with a 403 saying why, and the agent runs on", async () => {
  const agentId = await busyAgent();
  const refused = await request('POST', `/v1/agents/${agentId}/halt`, {
    origin: 'https://evil.example',
    'sec-fetch-site': 'cross-site',
  });
  expect(refused.status).toBe(403);
  expect(refused.type).toBe('application/problem+json');
  expect(refused.json).toMatchObject({ title: 'Forbidden', status: 403 });
  expect(refused.json.detail).toContain("this one came from the origin 'https://evil.example'");
  expect(refused.json.detail).toContain('Call it with curl or the CLI');
  // A bodyless POST with no Origin (curl without -d) is told how to send one.
  const bodyless = await request('POST', `/v1/agents/${agentId}/halt`);
  expect(bodyless.status).toBe(403);
  expect(bodyless.json.detail).toContain(`Send -H 'content-type: application/json' -d '{}'`);
  expect(await stateOf(agentId)).toBe('EXECUTING');
  await request('POST', `/v1/agents/${agentId}/halt`, JSON_BODY, '{}');
});

it('refuses a request addressed to a name that is not loopback (DNS rebinding), reads included', async () => {
  const agentId = await busyAgent();
  const read = await request('GET', `/v1/agents/${agentId}`, { host: `evil.example:${port}` });
  expect(read.status).toBe(403);
  expect(read.json.detail).toContain(`this one was addressed to 'evil.example:${port}'`);
  expect(JSON.stringify(read.json)).not.toContain('EXECUTING');
  const halt = await request(
    'POST',
    `/v1/agents/${agentId}/halt`,
    {
      host: `evil.example:${port}`,
      origin: `http://evil.example:${port}`,
      'sec-fetch-site': 'same-origin',
      ...JSON_BODY,
    },
    '{}',
  );
  expect(halt.status).toBe(403);
  expect(await stateOf(agentId)).toBe('EXECUTING');
  await request('POST', `/v1/agents/${agentId}/halt`, JSON_BODY, '{}');
});

it('halts with a same-origin JSON POST, as a program or the API’s own page sends it', async () => {
  const agentId = await busyAgent();
  const halted = await request(
    'POST',
    `/v1/agents/${agentId}/halt`,
    { origin: `http://localhost:${port}`, host: `localhost:${port}`, 'sec-fetch-site': 'same-origin', ...JSON_BODY },
    JSON.stringify({ reason: 'drill' }),
  );
  expect(halted).toMatchObject({ status: 202, json: { halted: true, agentId } });
  await eventually(`${agentId} stopped`, async () => ((await stateOf(agentId)) === 'STOPPED' ? true : undefined));
  const unlocked = await request('POST', `/v1/agents/${agentId}/unlock`, JSON_BODY, '{}');
  expect(unlocked).toMatchObject({ status: 200, json: { unlocked: true } });
});
