/**
 * What only Bedrock does, through real workflows on a real server and the real AWS SDK client against a
 * local Converse server (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`): a failed tool call goes back as a
 * `toolResult` with `status: "error"`, and a model the account may not use pauses the agent with the fix.
 * The behaviours every provider shares (round trip, throttling, 5xx, ValidationException, timeouts,
 * SYSTEM_HALT) are in llm-providers.test.ts.
 */
import { parseAgentConfig } from '../../core/config';
import {
  bedrockError,
  bedrockModelOf,
  bedrockResponse,
  startFakeServer,
  type FakeReply,
  type FakeRequest,
  type FakeServer,
  type WireBody,
} from '../helpers/fake-llm-server';
import { alertFor, makeWorkspace, startHarness, uniqueId, type Harness } from '../helpers/harness';

// The worker's AWS credentials, as its environment holds them: the SDK's default chain reads them here.
process.env.AWS_ACCESS_KEY_ID = 'AKIDSTARRYBEDROCK';
process.env.AWS_SECRET_ACCESS_KEY = 'starry-bedrock-secret';

const NOT_ENABLED = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const PROFILE_DENIED = 'us.amazon.nova-lite-v1:0';
const MISSING = 'amazon.nova-nonexistent-v9:0';

let server: FakeServer;
let h: Harness;
const seen = (model: string): FakeRequest[] => server.requests.filter((r) => bedrockModelOf(r.path) === model);

function answer(req: FakeRequest): FakeReply {
  const model = bedrockModelOf(req.path) ?? '';
  const n = seen(model).length;
  switch (model) {
    case 'pain':
      return n === 1
        ? {
            json: bedrockResponse({
              content: [{ toolUse: { toolUseId: 'tooluse_p1', name: 'fs_read', input: { path: 'missing.md' } } }],
              stopReason: 'tool_use',
              usage: { input: 300, output: 12 },
            }),
          }
        : {
            json: bedrockResponse({ content: [{ text: 'There is no missing.md.' }], usage: { input: 420, output: 9 } }),
          };
    case NOT_ENABLED:
      return bedrockError(
        403,
        'AccessDeniedException',
        "You don't have access to the model with the specified model ID.",
      );
    case PROFILE_DENIED:
      return bedrockError(
        403,
        'AccessDeniedException',
        `User: arn:aws:sts::123456789012:assumed-role/starry-worker/task is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:us-east-1:123456789012:inference-profile/${PROFILE_DENIED} because no identity-based policy allows the bedrock:InvokeModel action`,
      );
    default:
      return bedrockError(404, 'ResourceNotFoundException', 'Model not found.');
  }
}

beforeAll(async () => {
  server = await startFakeServer(answer, { http2: true });
  h = await startHarness({
    name: 'llm-bedrock',
    activities: {
      llm: { bedrock: { env: { AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_BEDROCK_RUNTIME: server.url } } },
    },
  });
});
afterAll(async () => {
  await h?.stop();
  await server?.close();
});

async function run(model: string, goal = 'Say ok.') {
  const agentId = uniqueId('bedrock');
  const config = parseAgentConfig(
    {
      workspace: [makeWorkspace({ 'notes.md': 'notes\n' })],
      verify: false,
      retry: { initialIntervalMs: 100, maximumAttempts: 3 },
    },
    `bedrock:${model}`,
  );
  const { taskId } = await h.agents.submit(agentId, { goal, config });
  return { agentId, result: await h.agents.waitForTask(agentId, taskId, { timeoutMs: 60_000 }) };
}

it('sends a failed tool call back as a toolResult with status error, carrying the pain', async () => {
  const { result } = await run('pain', 'Read missing.md.');
  expect(result).toMatchObject({
    outcome: 'COMPLETED',
    finalText: 'There is no missing.md.',
    tokensUsed: 300 + 12 + 420 + 9,
  });
  expect(result.toolCalls).toEqual([expect.objectContaining({ name: 'fs.read', status: 'failed' })]);
  const second = seen('pain')[1]?.body as WireBody;
  expect(second.messages.at(-1)).toEqual({
    role: 'user',
    content: [
      {
        toolResult: {
          toolUseId: 'tooluse_p1',
          content: [{ text: expect.stringMatching(/【System Pain Alert】[\s\S]*ENOENT/) }],
          status: 'error',
        },
      },
    ],
  });
});

it.each([
  [
    'a model whose access is not enabled',
    NOT_ENABLED,
    `enable access to ${NOT_ENABLED} in the Bedrock console (Model access) for us-east-1, and let the worker's role call bedrock:InvokeModel on arn:aws:bedrock:us-east-1::foundation-model/${NOT_ENABLED}`,
  ],
  [
    'an inference profile the role may not call',
    PROFILE_DENIED,
    `bedrock:InvokeModel on arn:aws:bedrock:us-east-1:ACCOUNT:inference-profile/${PROFILE_DENIED} and arn:aws:bedrock:*::foundation-model/amazon.nova-lite-v1:0`,
  ],
  ['a model id Bedrock does not know', MISSING, 'aws bedrock list-foundation-models --region us-east-1'],
])(
  'pauses the agent on %s, with the fix in the reason, without retrying, and raises the alert',
  async (_what, model, fix) => {
    const { agentId, result } = await run(model);
    expect(result).toMatchObject({ outcome: 'FAILED', agentState: 'ERROR_PAUSED', reason: { code: 'FATAL' } });
    expect(result.reason?.message).toContain(fix);
    expect(seen(model)).toHaveLength(1);
    expect(await alertFor(h, agentId)).toMatchObject({ agentState: 'ERROR_PAUSED' });
  },
);
