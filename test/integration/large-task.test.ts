/**
 * A task of any size can be read back (issue 52): a real task of ~30 MB of model and tool text — 150
 * ticks, each a 200 KB answer from an OpenAI-compatible model (in the history: 30 MB over several
 * runs, each over gRPC's 4 MiB message limit) and a 200 KB result from the worker's own tool (stored
 * as the model sees it, cut at 16,000 characters) — read through `GET /v1/tasks/{id}/events?from=0`, the SDK's reader, `starry logs`
 * and `starry logs --transcript`, end to end. No answer the API asks of Temporal is over 4 MiB, and every
 * stream event stays a preview of its text with where the rest is.
 */
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { createApp } from '../../api/app';
import { authenticator, devToken } from '../../api/auth';
import { defineTool } from '../../activities/tools';
import { localDirStore } from '../../activities/store';
import { AgentClient } from '../../client/agent-client';
import { parseTaskConfig } from '../../core/config';
import { GRPC_MESSAGE_LIMIT } from '../../core/history-pages';
import { PREVIEW_CHARS } from '../../core/stream-preview';
import { projectRoot } from '../../dev/paths';
import { openAiCompletion, startFakeServer, type FakeServer } from '../helpers/fake-llm-server';
import { address, makeWorkspace, privateDir, startHarness, uniqueId, type Harness } from '../helpers/harness';
import { readStream } from '../helpers/sse';

jest.setTimeout(600_000);

const TICKS = 150;
const KB = 1024;
const SECRET = 'test-secret-that-is-at-least-32-characters-long';
const USAGE = { prompt: 100, completion: 10 };
/** A tick's text: its marker first, then filler, `bytes` in all. */
const text = (marker: string, bytes: number) => `${marker} ${'x'.repeat(bytes - marker.length - 1)}`;

const emit = defineTool({
  name: 'bulk.emit',
  description: 'Returns a large block of text.',
  input: z.object({ n: z.number().int() }),
  run: ({ n }) => text(`tool tick ${n}`, 200 * KB),
});

let h: Harness;
let model: FakeServer;
let storeDir: string;
let workflowId: string;

beforeAll(async () => {
  let calls = 0;
  model = await startFakeServer(() => {
    const n = ++calls;
    return {
      json:
        n < TICKS
          ? openAiCompletion({
              text: text(`model tick ${n}`, 200 * KB),
              toolCalls: [{ id: `call_${n}`, name: 'bulk_emit', arguments: JSON.stringify({ n }) }],
              usage: USAGE,
            })
          : openAiCompletion({ text: 'Done.', usage: USAGE }),
    };
  });
  // Outside the workspace roots, as a worker requires of its store.
  storeDir = privateDir('starry-large-store');
  h = await startHarness({
    name: 'large-task',
    tools: [emit],
    activities: {
      store: localDirStore(storeDir),
      llm: { openai: { env: { STARRY_OPENAI_API_KEY: 'sk-large', OPENAI_BASE_URL: `${model.url}/v1` } } },
    },
  });
  const agentId = uniqueId('large');
  const config = parseTaskConfig(
    {
      workspace: [makeWorkspace()],
      verify: false,
      tools: { maxOutputBytes: 256 * KB },
      safety: { maxTicks: TICKS + 5, tokenBudget: 10_000_000 },
    },
    'openai:large-model',
  );
  const submitted = await h.agents.submit(agentId, { goal: 'Emit a lot of text.', config });
  workflowId = submitted.workflowId;
  const result = await h.agents.waitForTask(agentId, submitted.taskId, { timeoutMs: 480_000 });
  expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: TICKS });
});
afterAll(async () => {
  await h?.stop();
  await model?.close();
});

/** The runs of the task, oldest first, with their history sizes. */
async function runs(): Promise<number[]> {
  const sizes: number[] = [];
  let runId: string | undefined = (await h.agents.client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const info = (await h.agents.client.workflow.getHandle(workflowId, runId).describe()).raw.workflowExecutionInfo;
    sizes.unshift(Number(info?.historySizeBytes ?? 0));
    const first: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse =
      await h.agents.client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId, runId },
        maximumPageSize: 1,
      });
    runId = first.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return sizes;
}

/** `starry …` in a child process (the worker runs in this one), its whole output. */
function starry(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [path.join(projectRoot(), 'bin', 'starry.js'), ...args], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: address(),
      STARRY_TASK_QUEUE: h.taskQueue,
      STARRY_STORE_DIR: storeDir,
      STARRY_QUIET: '1',
    },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.on('data', (d: Buffer) => err.push(d));
  return new Promise((resolve) =>
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }),
    ),
  );
}

it('holds runs over the 4 MiB a single answer may carry', async () => {
  const sizes = await runs();
  expect(sizes.length).toBeGreaterThan(2);
  expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(TICKS * 200 * KB);
  expect(sizes.filter((s) => s > GRPC_MESSAGE_LIMIT).length).toBeGreaterThan(0);
});

it('streams every event from the start over HTTP, each a bounded preview saying where the rest is, no Temporal answer over 4 MiB', async () => {
  // The API's own connection, its history answers measured as they arrive.
  const connection = await Connection.connect({ address: address() });
  const agents = new AgentClient({ connection, taskQueue: h.taskQueue });
  const service = agents.client.workflowService;
  const answers: number[] = [];
  const original = service.getWorkflowExecutionHistory.bind(service);
  service.getWorkflowExecutionHistory = ((...args: Parameters<typeof original>) =>
    original(...args).then((res) => {
      answers.push(temporal.api.workflowservice.v1.GetWorkflowExecutionHistoryResponse.encode(res).finish().length);
      return res;
    })) as typeof original;
  const app = createApp({ agents: async () => agents, auth: authenticator({ secret: SECRET }) });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/tasks/${workflowId}/events?from=0`;
    const { status, events } = await readStream(url, {
      token: await devToken({ secret: SECRET, sub: 'reader', roles: ['viewer'] }),
    });
    expect(status).toBe(200);
    const llm = events.filter((e) => e.event === 'llm');
    expect(llm).toHaveLength(TICKS);
    for (const [i, e] of llm.slice(0, -1).entries()) {
      expect(e.data).toMatchObject({
        tick: i + 1,
        text: expect.stringMatching(new RegExp(`^model tick ${i + 1} x`)),
        ref: expect.stringMatching(/^[0-9a-f]{64}$/),
        cut: [{ path: 'text', chars: 200 * KB }],
      });
      expect((e.data.text as string).length).toBe(PREVIEW_CHARS);
    }
    expect(events.filter((e) => e.event === 'tool' && e.data.status === 'ok')).toHaveLength(TICKS - 1);
    expect(events.at(-1)).toMatchObject({ event: 'end', data: { status: 'completed', result: { ticks: TICKS } } });
    expect(Math.max(...events.map((e) => JSON.stringify(e.data).length))).toBeLessThan(4 * PREVIEW_CHARS);
    // Read in pages: many answers, none over the limit.
    expect(answers.length).toBeGreaterThan(5);
    expect(Math.max(...answers)).toBeLessThan(GRPC_MESSAGE_LIMIT);

    // The SDK's reader gives the same events.
    const same = [];
    for await (const e of await h.agents.taskEvents(workflowId, { from: 'start' })) same.push(e);
    expect(same.map((e) => ({ event: e.event, id: e.id, data: e.data }))).toEqual(events);
  } finally {
    (server as { closeAllConnections?: () => void }).closeAllConnections?.();
    await new Promise((r) => server.close(r));
    await connection.close();
  }
});

it('prints its log with `starry logs`, every tick', async () => {
  const logs = await starry(['logs', workflowId]);
  expect(logs).toMatchObject({ code: 0, stderr: '' });
  expect(logs.stdout).toContain(`tick ${TICKS} ·`);
  expect(logs.stdout).toContain(`model tick ${TICKS - 1} x`);
  expect(logs.stdout).toMatch(/COMPLETED/);
});

it('prints its whole transcript, ~30 MB, with `starry logs --transcript`', async () => {
  const transcript = await starry(['logs', workflowId, '--transcript']);
  expect(transcript).toMatchObject({ code: 0, stderr: '' });
  expect(transcript.stdout.length).toBeGreaterThan((TICKS - 1) * 200 * KB);
  for (const n of [1, TICKS - 1]) {
    expect(transcript.stdout).toContain(`\n${text(`model tick ${n}`, 200 * KB)}\n`);
    // What the model was sent of the tool's result: its first 16,000 characters.
    expect(transcript.stdout).toContain(`\n${text(`tool tick ${n}`, 16_000)}… [cut at 16000 characters]\n`);
  }
});
