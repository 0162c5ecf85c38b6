/**
 * Amazon Bedrock through the Converse API (`@aws-sdk/client-bedrock-runtime`): one `ConverseCommand`
 * per LLM call, for any model Converse serves (Anthropic, Amazon Nova, Llama, Mistral, …) by model id,
 * inference profile id or ARN. The region, the endpoint and the credentials are the worker's alone: the
 * region from `AWS_REGION` (else `AWS_DEFAULT_REGION`), the endpoint from `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`
 * (else `AWS_ENDPOINT_URL`, else AWS's), the credentials from the SDK's default chain (the task role on
 * ECS). The SDK's own retries are off (`maxAttempts: 1`): Temporal's retry policy is the only one.
 */
import {
  BedrockRuntimeClient,
  ConverseCommand,
  type BedrockRuntimeClientConfig,
  type ContentBlock,
  type ConverseCommandInput,
  type ConverseCommandOutput,
  type Message,
  type Tool,
} from '@aws-sdk/client-bedrock-runtime';
import { normalizedError, type NormalizedError } from '../../core/errors';
import type { ChatMessage, LlmRequest, LlmResponse, LlmToolCall, TokenUsage, ToolSpec } from '../../core/llm';
import { bedrockInvokeArns, type LlmSpec } from '../../core/llm-spec';
import { classifyNetworkError, httpStatusCode } from '../../core/errors/http';
import { LlmError } from '../../core/errors/activity';
import { toolNameCodec } from './openai';
import type { LlmProvider } from './provider';

const SOURCE = 'llm bedrock';

/** Options of the Bedrock provider; anything absent is read from the worker's environment. */
export interface BedrockProviderOptions {
  /** Default `AWS_REGION`, else `AWS_DEFAULT_REGION`. */
  region?: string;
  /** Default `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, else `AWS_ENDPOINT_URL`, else Bedrock's own for the region. */
  endpoint?: string;
  /**
   * The credentials (library use, tests); default: the AWS SDK's default chain on the worker. Never from a
   * task: a spec names only the model.
   */
  credentials?: BedrockRuntimeClientConfig['credentials'];
  /** The environment to read; default `process.env`. */
  env?: Record<string, string | undefined>;
}

/** Where the worker will call Bedrock, or why it cannot. */
export type BedrockSetup = { ok: true; region: string; endpoint?: string } | { ok: false; message: string };

/**
 * Resolve the region and the endpoint from options and environment, without contacting anything.
 *
 * ```ts
 * resolveBedrockSetup({ env: { AWS_REGION: 'us-east-1' } }) // { ok: true, region: 'us-east-1' }
 * ```
 */
export function resolveBedrockSetup(opts: BedrockProviderOptions = {}): BedrockSetup {
  const env = opts.env ?? process.env;
  const read = (name: string) => env[name]?.trim() || undefined;
  const region = opts.region ?? read('AWS_REGION') ?? read('AWS_DEFAULT_REGION');
  const endpoint = opts.endpoint ?? read('AWS_ENDPOINT_URL_BEDROCK_RUNTIME') ?? read('AWS_ENDPOINT_URL');
  if (!region)
    return {
      ok: false,
      message:
        'Bedrock needs a region: set AWS_REGION (or AWS_DEFAULT_REGION) where the worker runs, to a region where the model is enabled',
    };
  if (endpoint !== undefined && !/^https?:\/\/[^/]+/.test(endpoint))
    return { ok: false, message: `the Bedrock endpoint "${endpoint}" is not an http(s) URL` };
  return endpoint ? { ok: true, region, endpoint } : { ok: true, region };
}

// ---------------------------------------------------------------------------------------------------
// Mapping.

/**
 * Declare the tools as Converse's `toolConfig`: names as Bedrock allows them (`fs.read` travels as
 * `fs_read`, as for OpenAI), the JSON Schemas unchanged in `inputSchema.json`.
 *
 * ```ts
 * toBedrockTools(toolSpecs()) // [{ toolSpec: { name: 'fs_read', description, inputSchema: { json: {…} } } }, …]
 * ```
 */
export function toBedrockTools(tools: readonly ToolSpec[]): Tool[] {
  const names = toolNameCodec(tools, 'Bedrock');
  return tools.map((t) => ({
    toolSpec: {
      name: names.toWire(t.name),
      ...(t.description ? { description: t.description } : {}),
      // The SDK's document type is narrower than a JSON Schema object; the JSON goes as it is.
      inputSchema: { json: t.parameters as never },
    },
  }));
}

/**
 * Build the Converse request for an LLM call: system messages → `system`; the rest as alternating
 * `user` and `assistant` messages (Converse refuses two in a row of one role, so they are merged); a
 * tool result → a `toolResult` block of the user's turn, `status: "error"` when it is pain; the output
 * cap → `inferenceConfig.maxTokens`.
 *
 * ```ts
 * const input = toBedrockRequest(req, 'amazon.nova-lite-v1:0');
 * ```
 */
export function toBedrockRequest(
  req: Pick<LlmRequest, 'messages' | 'tools' | 'maxOutputTokens'>,
  modelId: string,
): ConverseCommandInput {
  const names = toolNameCodec(req.tools, 'Bedrock');
  const system: { text: string }[] = [];
  const messages: Message[] = [];
  const add = (role: 'user' | 'assistant', content: ContentBlock[]) => {
    if (!content.length) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content?.push(...content);
    else messages.push({ role, content });
  };
  for (const m of req.messages) {
    switch (m.role) {
      case 'system':
        if (m.text) system.push({ text: m.text });
        break;
      case 'user':
        // Converse refuses a blank text block.
        add('user', m.text.trim() ? [{ text: m.text }] : []);
        break;
      case 'assistant':
        add('assistant', assistantContent(m, names.toWire));
        break;
      case 'tool':
        add('user', [
          {
            toolResult: {
              toolUseId: m.callId,
              content: [{ text: m.text }],
              status: m.isError ? 'error' : 'success',
            },
          },
        ]);
        break;
    }
  }
  return {
    modelId,
    messages,
    ...(system.length ? { system } : {}),
    inferenceConfig: { maxTokens: req.maxOutputTokens },
    ...(req.tools.length ? { toolConfig: { tools: toBedrockTools(req.tools) } } : {}),
  };
}

function assistantContent(
  m: Extract<ChatMessage, { role: 'assistant' }>,
  toWire: (n: string) => string,
): ContentBlock[] {
  const content: ContentBlock[] = m.text?.trim() ? [{ text: m.text }] : [];
  for (const c of m.toolCalls ?? []) {
    content.push({ toolUse: { toolUseId: c.id, name: toWire(c.name), input: (c.args ?? {}) as never } });
  }
  return content;
}

/** Stop reasons after which an answer with no content is still an answer (an empty turn). */
const NORMAL_STOP = new Set(['end_turn', 'tool_use', 'max_tokens', 'stop_sequence']);

/** What one Converse answer means: a response, or a failure of the call. */
export type BedrockAnswer = { ok: true; response: LlmResponse } | { ok: false; error: NormalizedError };

/**
 * Read a Converse response: its text blocks joined, its `toolUse` blocks as tool calls (names mapped
 * back), usage with the prompt-cache reads and writes counted as input (they are billed), the reads also
 * as `cachedInputTokens`. A response with no content that stopped for another reason than the normal
 * ones (`content_filtered`, `guardrail_intervened`, `malformed_tool_use`, …) is a failed call.
 *
 * ```ts
 * const answer = fromBedrockResponse(await client.send(new ConverseCommand(input)), { tools: req.tools, callNumber: 1 });
 * ```
 */
export function fromBedrockResponse(
  resp: Pick<ConverseCommandOutput, 'output' | 'stopReason' | 'usage'>,
  ctx: { tools: ReadonlyArray<Pick<ToolSpec, 'name'>>; callNumber: number },
): BedrockAnswer {
  const content = resp.output?.message?.content ?? [];
  if (content.length === 0 && !NORMAL_STOP.has(resp.stopReason ?? '')) {
    const message = `Bedrock stopped with ${resp.stopReason ?? 'no stop reason'} and no content`;
    return { ok: false, error: normalizedError({ code: 'EINVAL', source: SOURCE, message }) };
  }
  const names = toolNameCodec(ctx.tools, 'Bedrock');
  const texts = content.filter((b) => typeof b.text === 'string').map((b) => b.text as string);
  const toolCalls: LlmToolCall[] = content
    .filter((b) => b.toolUse)
    .map((b, i) => ({
      id: b.toolUse?.toolUseId || `call-${ctx.callNumber}-${i + 1}`,
      name: names.fromWire(b.toolUse?.name ?? ''),
      args: b.toolUse?.input ?? {},
    }));
  const response: LlmResponse = { toolCalls, usage: bedrockUsage(resp.usage) };
  const text = texts.join('');
  if (text || toolCalls.length === 0) response.text = text;
  return { ok: true, response };
}

/**
 * Converse's usage as ours: `inputTokens` counts the uncached input only, so the cache reads and writes
 * are added (all three are billed); the reads are also `cachedInputTokens`. A count that is not a number
 * is passed on as it came, for the LLM activity to refuse.
 */
function bedrockUsage(u: ConverseCommandOutput['usage']): TokenUsage {
  const read = u?.cacheReadInputTokens ?? 0;
  const write = u?.cacheWriteInputTokens ?? 0;
  const input = u?.inputTokens;
  return {
    inputTokens: typeof input === 'number' ? input + read + write : (input as unknown as number),
    outputTokens: u?.outputTokens as number,
    ...(read ? { cachedInputTokens: read } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// The provider.

/** The spec this provider serves: `bedrock:MODEL_ID`. */
export type BedrockSpec = Extract<LlmSpec, { provider: 'bedrock' }>;

/**
 * Create the Bedrock provider. The region and endpoint are resolved once; the SDK client is created on
 * first use, so a worker without AWS settings still starts (and a Bedrock task fails with a clear,
 * fatal error).
 *
 * ```ts
 * const bedrock = createBedrockProvider({ env: { AWS_REGION: 'us-east-1' } });
 * const res = await callLlm(bedrock, req, { provider: 'bedrock', model: 'amazon.nova-lite-v1:0' });
 * ```
 */
export function createBedrockProvider(opts: BedrockProviderOptions = {}): LlmProvider<BedrockSpec> {
  const setup = resolveBedrockSetup(opts);
  const credential = opts.credentials ? 'the credentials given to the provider' : CHAIN;
  let client: BedrockRuntimeClient | undefined;
  return {
    preflight: (spec) => (setup.ok ? undefined : `--llm bedrock:${spec.model}: ${setup.message}`),
    async generate(req, { model }, { signal }) {
      if (!setup.ok) throw LlmError.of({ code: 'E_AUTH', kind: 'fatal', source: SOURCE, message: setup.message });
      client ??= new BedrockRuntimeClient({
        region: setup.region,
        ...(setup.endpoint ? { endpoint: setup.endpoint } : {}),
        ...(opts.credentials ? { credentials: opts.credentials } : {}),
        maxAttempts: 1,
      });
      let resp: ConverseCommandOutput;
      try {
        resp = await client.send(new ConverseCommand(toBedrockRequest(req, model)), { abortSignal: signal });
      } catch (err) {
        throw new LlmError(bedrockFailure(err, { model, region: setup.region, credential }), undefined, {
          cause: err,
        });
      }
      const answer = fromBedrockResponse(resp, { tools: req.tools, callNumber: req.callNumber });
      if (!answer.ok) throw new LlmError(answer.error);
      return answer.response;
    },
  };
}

/** Where the default credential chain looks, in its order, for the message when it finds nothing. */
const CHAIN =
  'the AWS SDK default chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, SSO, the shared config and credentials ' +
  'files (AWS_PROFILE), credential_process, a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE), the ECS ' +
  'container role, the EC2 instance role';

const TRANSIENT: Record<string, NormalizedError['code']> = {
  ThrottlingException: 'E_RATE_LIMIT',
  ServiceQuotaExceededException: 'E_RATE_LIMIT',
  ServiceUnavailableException: 'E_UNAVAILABLE',
  InternalServerException: 'E_UNAVAILABLE',
  ModelNotReadyException: 'E_UNAVAILABLE',
  ModelErrorException: 'E_UNAVAILABLE',
  ModelTimeoutException: 'ETIMEDOUT',
};

/** AWS's answers to a request whose signature or credentials it refused (not a permission). */
const CREDENTIAL_REFUSED = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
  'IncompleteSignature',
  'InvalidClientTokenId',
  'MissingAuthenticationTokenException',
]);

/**
 * Classify what the SDK threw: a service exception by its name (throttling and 5xx transient; access
 * denied, a refused credential and a model that does not exist fatal, with the fix; a validation error
 * a failed task), no credentials (fatal, naming the chain), a network error, or anything else.
 *
 * ```ts
 * bedrockFailure(throttlingException, { model: 'amazon.nova-lite-v1:0', region: 'us-east-1' }).kind // 'transient'
 * ```
 */
export function bedrockFailure(
  err: unknown,
  ctx: { model: string; region: string; credential?: string },
): NormalizedError {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number }; $fault?: string };
  const name = e?.name ?? '';
  const said = `${name}: ${e?.message ?? String(err)}`;
  const where = `model ${ctx.model} in ${ctx.region}`;
  if (name === 'CredentialsProviderError') {
    return normalizedError({
      code: 'E_AUTH',
      kind: 'fatal',
      source: SOURCE,
      message: `no AWS credentials on the worker for Bedrock (${e.message ?? ''}); tried ${CHAIN}`,
      suggestion:
        'Give the worker AWS credentials (a role on ECS or EC2, AWS_PROFILE, or access keys), then unlock the agent.',
    });
  }
  const status = e?.$metadata?.httpStatusCode;
  if (status === undefined && !e?.$fault) {
    const network = classifyNetworkError(err, SOURCE);
    if (network) return network;
    // The SDK speaks HTTP/2 to Bedrock: a reset stream or session is a connection lost.
    if (/^ERR_HTTP2_/.test(String((err as { code?: unknown }).code)))
      return normalizedError({
        code: 'ECONNRESET',
        kind: 'transient',
        source: SOURCE,
        message: e?.message ?? String(err),
      });
    // Neither AWS's answer nor a network failure: the request could not be built or signed.
    return normalizedError({
      code: 'E_INTERNAL',
      kind: 'fatal',
      source: SOURCE,
      message: `the Bedrock request could not be made: ${e?.message ?? String(err)}`,
    });
  }
  if (status !== undefined && status >= 200 && status < 300) {
    // The call succeeded and its body did not parse (a proxy's page, a truncated answer): try again.
    return normalizedError({
      code: 'E_UNAVAILABLE',
      kind: 'transient',
      source: SOURCE,
      message: `Bedrock answered ${status} with something unreadable: ${e?.message ?? String(err)}`,
    });
  }
  const transient = TRANSIENT[name];
  if (transient) return normalizedError({ code: transient, kind: 'transient', source: SOURCE, message: said });
  if (name === 'AccessDeniedException' || status === 403 || CREDENTIAL_REFUSED.has(name)) {
    const arns = bedrockInvokeArns(ctx.model, {
      partition: partitionOf(ctx.region),
      region: ctx.region,
      account: 'ACCOUNT',
    });
    const fix = CREDENTIAL_REFUSED.has(name)
      ? `AWS refused the worker's credentials (from ${ctx.credential ?? CHAIN}): check them where the worker runs`
      : `enable access to ${ctx.model} in the Bedrock console (Model access) for ${ctx.region}, ` +
        `and let the worker's role call bedrock:InvokeModel on ${arns.join(' and ')}`;
    return normalizedError({
      code: 'E_AUTH',
      kind: 'fatal',
      source: SOURCE,
      message: `${said} (${where}: ${fix})`,
      suggestion: `${fix[0]?.toUpperCase()}${fix.slice(1)}; then unlock the agent.`,
    });
  }
  if (name === 'ResourceNotFoundException' || status === 404) {
    const fix =
      `check the model id with \`aws bedrock list-foundation-models --region ${ctx.region}\` ` +
      '(a model served only across regions needs its inference profile id, e.g. us.MODEL_ID)';
    return normalizedError({
      code: 'ENOENT',
      kind: 'fatal',
      source: SOURCE,
      message: `${said} (${where}: ${fix})`,
      suggestion: `Submit with --llm bedrock:MODEL_ID of a model enabled in ${ctx.region}, or unlock the agent once it is.`,
    });
  }
  // The rest by status, as every provider's: ValidationException (400) a failed task, any 5xx transient.
  const code =
    status !== undefined ? httpStatusCode(status, 'worker') : e.$fault === 'server' ? 'E_UNAVAILABLE' : 'EINVAL';
  return normalizedError({ code, source: SOURCE, message: `${said} (${where})` });
}

/** The AWS partition of a region, for the ARNs a message names. */
function partitionOf(region: string): string {
  return region.startsWith('cn-') ? 'aws-cn' : region.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
}
