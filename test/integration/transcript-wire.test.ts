/**
 * What the LLM receives on the wire does not depend on where the transcript lives: the request bodies
 * of a multi-tick task (tool results small and cut, a failed call's pain, the verification step, a
 * Gemini thought signature, a Bedrock tool result's error status) are compared byte for byte with
 * bodies recorded from the code that sent the whole context in every activity input (test/fixtures/wire/,
 * recorded by `STARRY_RECORD_WIRE=1 npx jest test/integration/transcript-wire.test.ts`; Bedrock's by the
 * provider's first version, through the AWS SDK).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAgentConfig } from '../../core/config';
import {
  bedrockModelOf,
  bedrockResponse,
  geminiResponse,
  openAiCompletion,
  startFakeServer,
  vertexModelOf,
  type FakeReply,
  type FakeRequest,
  type FakeServer,
} from '../helpers/fake-llm-server';
import { parseWorkerPolicy } from '../../core/worker-policy';
import { makeWorkspace, startHarness, uniqueId, type Harness, type HarnessOptions } from '../helpers/harness';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'wire');
const small = 'a line of notes\n'.repeat(128); // 2 KB
const big = Array.from(
  { length: 1200 },
  (_, i) => `line ${String(i).padStart(5, '0')} of a large file, forty characters\n`,
).join(''); // 54 KB: under the 64 KB output cap, over the 16,000 characters a result keeps

const workspaces: string[] = [];

/**
 * A workspace in the system's temp dir, not the run's own (test/run-tmpdir.ts): the big file's result
 * is cut at 16,000 characters with the workspace's path in it, so the path must be as long as when the
 * bodies were recorded (`/tmp/starry-ws-XXXXXX`). Removed by this file's teardown.
 */
function recordedLengthWorkspace(): string {
  const root = makeWorkspace({ 'notes.md': small, 'big.txt': big }, process.env.STARRY_SYSTEM_TMPDIR ?? os.tmpdir());
  workspaces.push(root);
  return root;
}

interface Wire {
  name: 'openai' | 'gemini' | 'bedrock';
  /** The model a request asks for. */
  model(req: FakeRequest): string | undefined;
  /** The wire runs over HTTP/2 (the AWS SDK's Bedrock client). */
  http2?: boolean;
  spec(url: string): string;
  activities(url: string): HarnessOptions['activities'];
  /**
   * The model's replies, in order: read two files (one missing), read the big one, answer, answer again after VERIFY.
   */
  replies: FakeReply[];
}

const openai: Wire = {
  name: 'openai',
  model: (req) => req.body?.model as string | undefined,
  spec: (url) => `openai:wire@${url}/v1`,
  activities: (url) => ({
    llm: { openai: { env: { STARRY_OPENAI_API_KEY: 'sk-wire', OPENAI_BASE_URL: `${url}/v1` } } },
  }),
  replies: [
    {
      json: openAiCompletion({
        text: 'Reading.',
        toolCalls: [
          { id: 'c1', name: 'fs_read', arguments: '{"path":"notes.md"}' },
          { id: 'c2', name: 'fs_read', arguments: '{"path":"missing.md"}' },
        ],
        usage: { prompt: 900, completion: 20 },
      }),
    },
    {
      json: openAiCompletion({
        toolCalls: [{ id: 'c3', name: 'fs_read', arguments: '{"path":"big.txt"}' }],
        usage: { prompt: 1500, completion: 10 },
      }),
    },
    { json: openAiCompletion({ text: 'The notes repeat one line.', usage: { prompt: 5800, completion: 8 } }) },
    {
      json: openAiCompletion({ text: 'Verified: the notes repeat one line.', usage: { prompt: 5900, completion: 9 } }),
    },
  ],
};

const gemini: Wire = {
  name: 'gemini',
  model: (req) => vertexModelOf(req.path),
  spec: () => 'gemini:wire',
  activities: (url) => ({
    llm: { gemini: { baseUrl: url, apiKey: 'vertex-wire', project: 'starry-test', location: 'us-central1', env: {} } },
  }),
  replies: [
    {
      json: geminiResponse({
        parts: [
          { text: 'Read both files.', thought: true },
          { functionCall: { name: 'fs.read', args: { path: 'notes.md' } }, thoughtSignature: 'c2lnbmF0dXJlLW9uZQ==' },
          { functionCall: { name: 'fs.read', args: { path: 'missing.md' } } },
        ],
        usage: { prompt: 900, candidates: 20 },
      }),
    },
    {
      json: geminiResponse({
        parts: [
          { functionCall: { name: 'fs.read', args: { path: 'big.txt' } }, thoughtSignature: 'c2lnbmF0dXJlLXR3bw==' },
        ],
        usage: { prompt: 1500, candidates: 10 },
      }),
    },
    {
      json: geminiResponse({ parts: [{ text: 'The notes repeat one line.' }], usage: { prompt: 5800, candidates: 8 } }),
    },
    {
      json: geminiResponse({
        parts: [{ text: 'Verified: the notes repeat one line.' }],
        usage: { prompt: 5900, candidates: 9 },
      }),
    },
  ],
};

// The worker's AWS credentials for Bedrock, as its environment holds them (the SDK's default chain).
process.env.AWS_ACCESS_KEY_ID = 'AKIDSTARRYWIRE';
process.env.AWS_SECRET_ACCESS_KEY = 'starry-wire-secret';
const bedrock: Wire = {
  name: 'bedrock',
  model: (req) => bedrockModelOf(req.path),
  http2: true,
  spec: () => 'bedrock:wire',
  activities: (url) => ({
    llm: { bedrock: { env: { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_BEDROCK_RUNTIME: url } } },
  }),
  replies: [
    {
      json: bedrockResponse({
        content: [
          { text: 'Reading.' },
          { toolUse: { toolUseId: 'tooluse_1', name: 'fs_read', input: { path: 'notes.md' } } },
          { toolUse: { toolUseId: 'tooluse_2', name: 'fs_read', input: { path: 'missing.md' } } },
        ],
        stopReason: 'tool_use',
        usage: { input: 900, output: 20 },
      }),
    },
    {
      json: bedrockResponse({
        content: [{ toolUse: { toolUseId: 'tooluse_3', name: 'fs_read', input: { path: 'big.txt' } } }],
        stopReason: 'tool_use',
        usage: { input: 1500, output: 10, cacheRead: 900 },
      }),
    },
    { json: bedrockResponse({ content: [{ text: 'The notes repeat one line.' }], usage: { input: 5800, output: 8 } }) },
    {
      json: bedrockResponse({
        content: [{ text: 'Verified: the notes repeat one line.' }],
        usage: { input: 5900, output: 9 },
      }),
    },
  ],
};

describe.each([openai, gemini, bedrock])('the $name wire', (w) => {
  let server: FakeServer;
  let h: Harness;
  const { model } = w;

  let workspace: string;
  beforeAll(async () => {
    server = await startFakeServer(
      (req) => {
        if (model(req) !== 'wire') return { status: 404, json: { error: { message: 'no such model' } } };
        const n = server.requests.filter((r) => model(r) === 'wire').length;
        return w.replies[n - 1] ?? { status: 500, json: { error: { message: 'no more replies' } } };
      },
      { http2: w.http2 },
    );
    // The recorded bodies name a workspace in the system's temp dir, outside the run's roots: this
    // worker's one root is that workspace (never the temp dir itself, which may hold a checkout).
    workspace = recordedLengthWorkspace();
    const policy = parseWorkerPolicy({
      ...(JSON.parse(process.env.STARRY_WORKER_POLICY as string) as object),
      roots: [workspace],
    });
    h = await startHarness({ name: `wire-${w.name}`, activities: { ...w.activities(server.url), policy } });
  });
  afterAll(async () => {
    await h?.stop();
    await server?.close();
    for (const dir of workspaces.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('sends the same request bodies as when the whole context was the activity input', async () => {
    const agentId = uniqueId(`wire-${w.name}`);
    const config = parseAgentConfig(
      { workspace: [workspace], retry: { initialIntervalMs: 100, maximumAttempts: 2 } },
      w.spec(server.url),
    );
    const { taskId } = await h.agents.submit(agentId, {
      goal: 'Read notes.md, missing.md and big.txt, then say what the notes say.',
      config,
    });
    const result = await h.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 });
    expect(result).toMatchObject({ outcome: 'COMPLETED', ticks: 4, finalText: 'Verified: the notes repeat one line.' });

    // The workspace is a fresh folder per run: the only part of a body that differs between runs.
    const bodies = server.requests
      .filter((r) => model(r) === 'wire')
      .map((r) => JSON.stringify(r.body).split(workspace).join('<workspace>'));
    expect(bodies).toHaveLength(4);
    const file = path.join(FIXTURES, `${w.name}.json`);
    if (process.env.STARRY_RECORD_WIRE === '1') {
      mkdirSync(FIXTURES, { recursive: true });
      writeFileSync(file, `${JSON.stringify(bodies, null, 1)}\n`);
    }
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as string[];
    // Sanity of the recording: the big result is cut, the missing file is pain, VERIFY is asked.
    expect(recorded[2]).toContain('[cut at 16000 characters]');
    expect(recorded[1]).toContain('ENOENT');
    // Bedrock says which result is pain on the wire.
    if (w.name === 'bedrock') expect(recorded[1]).toContain('"status":"error"');
    expect(recorded[3]).toContain('VERIFY');
    bodies.forEach((body, i) => expect({ call: i + 1, body }).toEqual({ call: i + 1, body: recorded[i] }));
  });
});
