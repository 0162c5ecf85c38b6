/**
 * OpenAI-compatible chat completions (OpenAI, vLLM, llama.cpp server, Ollama): one `POST
 * {baseUrl}/chat/completions` per LLM call, with plain fetch. The base URL comes from the `--llm` spec
 * (within the worker policy's `llmAllow`) or is the worker's own; the API key comes only from the worker
 * and goes only to the worker's own base URL (`OPENAI_BASE_URL`): a task that names another endpoint
 * gets its calls sent there without a key.
 */
import type { ChatMessage, LlmRequest, LlmResponse, LlmToolCall, ToolSpec } from '../../core/llm';
import type { LlmSpec } from '../../core/llm-spec';
import { classifyHttpStatus, classifyNetworkError, retryAfterMs } from '../../core/errors/http';
import { LlmError } from '../../core/errors/activity';
import { withoutUndiciTimeouts } from './in-flight';
import type { LlmProvider } from './provider';
import { providerMessage } from './provider-message';

const SOURCE = 'llm openai';

/** Options of the OpenAI-compatible provider; anything absent is read from the worker's environment. */
export interface OpenAiProviderOptions {
  /**
   * Sent as `Authorization: Bearer …`. Default: `STARRY_OPENAI_API_KEY`, else `OPENAI_API_KEY`, else none (local
   * servers).
   */
  apiKey?: string;
  /** Where the key came from, for messages. Default: the variable it was read from. */
  apiKeySource?: string;
  /**
   * The endpoint the key belongs to, and the one `openai:MODEL` (no `@BASE_URL`) calls. Default:
   * `STARRY_OPENAI_BASE_URL`, else `OPENAI_BASE_URL`, else `https://api.openai.com/v1`.
   */
  baseUrl?: string;
  /** The environment to read; default `process.env`. */
  env?: Record<string, string | undefined>;
}

/** Where OpenAI's own API lives: the default endpoint of the worker's key. */
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * The worker's own OpenAI-compatible endpoint: where its key goes. Reads the options, then the
 * environment.
 *
 * ```ts
 * openAiBaseUrl({ env: { OPENAI_BASE_URL: 'https://llm.internal/v1' } }) // 'https://llm.internal/v1'
 * ```
 */
export function openAiBaseUrl(opts: Pick<OpenAiProviderOptions, 'baseUrl' | 'env'> = {}): string {
  const env = opts.env ?? process.env;
  return opts.baseUrl ?? (env.STARRY_OPENAI_BASE_URL?.trim() || env.OPENAI_BASE_URL?.trim() || OPENAI_DEFAULT_BASE_URL);
}

/** A base URL as compared for the key: parsed, without a trailing slash; undefined when not a URL. */
function sameEndpoint(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      return new URL(u).href.replace(/\/+$/, '');
    } catch {
      return undefined;
    }
  };
  const x = norm(a);
  return x !== undefined && x === norm(b);
}

/** The spec this provider serves: `openai:MODEL` or `openai:MODEL@BASE_URL`. */
export type OpenAiSpec = Extract<LlmSpec, { provider: 'openai' }>;

// ---------------------------------------------------------------------------------------------------
// Wire shapes (the subset we send and read).

export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type OpenAiMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAiToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface OpenAiRequestBody {
  model: string;
  messages: OpenAiMessage[];
  tools?: Array<{
    type: 'function';
    function: { name: string; description: string; parameters: Record<string, unknown> };
  }>;
  max_tokens?: number;
  max_completion_tokens?: number;
}

interface OpenAiResponseBody {
  choices?: Array<{
    message?: {
      content?: string | null;
      tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: unknown } }>;
    };
    finish_reason?: string | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

// ---------------------------------------------------------------------------------------------------
// Tool names.

const VALID_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * OpenAI function names (and Bedrock tool names) must match `^[a-zA-Z0-9_-]+$`, so `fs.read` travels as `fs_read`. The reverse
 * map is built from the declared tools, so it is exact; a name the model invents is returned as it
 * came (the workflow reports it as E_UNKNOWN_TOOL).
 *
 * ```ts
 * const names = toolNameCodec(toolSpecs());
 * names.toWire('fs.read')   // 'fs_read'
 * names.fromWire('fs_read') // 'fs.read'
 * ```
 * @throws RangeError when two tool names map to the same wire name.
 */
export function toolNameCodec(tools: ReadonlyArray<Pick<ToolSpec, 'name'>>, provider = 'OpenAI') {
  const toWire = (name: string) => (VALID_NAME.test(name) ? name : name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64));
  const back = new Map<string, string>();
  for (const { name } of tools) {
    const wire = toWire(name);
    const other = back.get(wire);
    if (other !== undefined && other !== name)
      throw new RangeError(`tool names "${other}" and "${name}" both become "${wire}" for ${provider}`);
    back.set(wire, name);
  }
  return { toWire, fromWire: (wire: string) => back.get(wire) ?? wire };
}

// ---------------------------------------------------------------------------------------------------
// Mapping.

/**
 * Where the output-token cap goes: OpenAI's own API has replaced `max_tokens` by
 * `max_completion_tokens` (reasoning models reject the old name); compatible servers read `max_tokens`.
 */
function usesMaxCompletionTokens(baseUrl: string): boolean {
  try {
    return new URL(baseUrl).hostname === 'api.openai.com';
  } catch {
    return false;
  }
}

/**
 * Build the chat completions request body for an LLM call.
 *
 * ```ts
 * const body = toOpenAiRequest(req, { model: 'gpt-4o-mini', baseUrl: 'http://127.0.0.1:8000/v1' });
 * ```
 */
export function toOpenAiRequest(
  req: Pick<LlmRequest, 'messages' | 'tools' | 'maxOutputTokens'>,
  target: { model: string; baseUrl: string },
): OpenAiRequestBody {
  const names = toolNameCodec(req.tools);
  const body: OpenAiRequestBody = {
    model: target.model,
    messages: req.messages.map((m) => toOpenAiMessage(m, names.toWire)),
  };
  if (req.tools.length) {
    body.tools = req.tools.map((t) => ({
      type: 'function',
      function: { name: names.toWire(t.name), description: t.description, parameters: t.parameters },
    }));
  }
  if (usesMaxCompletionTokens(target.baseUrl)) body.max_completion_tokens = req.maxOutputTokens;
  else body.max_tokens = req.maxOutputTokens;
  return body;
}

function toOpenAiMessage(m: ChatMessage, toWire: (name: string) => string): OpenAiMessage {
  switch (m.role) {
    case 'system':
    case 'user':
      return { role: m.role, content: m.text };
    case 'tool':
      return { role: 'tool', tool_call_id: m.callId, content: m.text };
    case 'assistant': {
      const out: OpenAiMessage = { role: 'assistant', content: m.text ?? null };
      if (m.toolCalls?.length) {
        out.tool_calls = m.toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          // The model's own text goes back as it was, even when it was not JSON.
          function: { name: toWire(c.name), arguments: c.rawArguments ?? JSON.stringify(c.args ?? {}) },
        }));
      }
      return out;
    }
  }
}

/** Tool-call arguments: a JSON string on the wire (some servers send an object); empty means `{}`. */
function parseArguments(raw: unknown): Pick<LlmToolCall, 'args' | 'rawArguments'> {
  if (raw === undefined || raw === null) return { args: {} };
  if (typeof raw !== 'string') return { args: raw };
  if (raw.trim() === '') return { args: {} };
  try {
    return { args: JSON.parse(raw) };
  } catch {
    return { rawArguments: raw };
  }
}

/**
 * Read a chat completions response into the provider-neutral shape. Usage comes from the response;
 * a server that omits it is charged an estimate (4 characters a token), so the budget still moves.
 *
 * ```ts
 * const res = fromOpenAiResponse(json, { tools: toolSpecs(), callNumber: 1, promptChars: 1200 });
 * ```
 * @throws Error when the body has no choice (the caller reports it as a bad answer from the provider).
 */
export function fromOpenAiResponse(
  body: unknown,
  ctx: { tools: ReadonlyArray<Pick<ToolSpec, 'name'>>; callNumber: number; promptChars: number },
): LlmResponse {
  const json = body as OpenAiResponseBody;
  const choice = json?.choices?.[0];
  if (!choice?.message) throw new Error('the response has no choices[0].message');
  const names = toolNameCodec(ctx.tools);
  const toolCalls: LlmToolCall[] = (choice.message.tool_calls ?? []).map((c, i) => ({
    id: c.id || `call-${ctx.callNumber}-${i + 1}`,
    name: names.fromWire(c.function?.name ?? ''),
    ...parseArguments(c.function?.arguments),
  }));
  const text = typeof choice.message.content === 'string' ? choice.message.content : undefined;
  const usage = {
    inputTokens: json.usage?.prompt_tokens ?? Math.ceil(ctx.promptChars / 4),
    outputTokens:
      json.usage?.completion_tokens ??
      Math.ceil(((text ?? '').length + JSON.stringify(choice.message.tool_calls ?? []).length) / 4),
  };
  const out: LlmResponse = { toolCalls, usage };
  if (text !== undefined && (text !== '' || toolCalls.length === 0)) out.text = text;
  return out;
}

// ---------------------------------------------------------------------------------------------------
// The provider.

function resolveKey(opts: OpenAiProviderOptions): { apiKey?: string; credential: string } {
  if (opts.apiKey)
    return { apiKey: opts.apiKey, credential: opts.apiKeySource ?? 'the OpenAI API key configured on the worker' };
  const env = opts.env ?? process.env;
  for (const name of ['STARRY_OPENAI_API_KEY', 'OPENAI_API_KEY']) {
    const value = env[name]?.trim();
    if (value) return { apiKey: value, credential: `the API key in ${name}` };
  }
  return { credential: 'the API key (none is set: set OPENAI_API_KEY or STARRY_OPENAI_API_KEY on the worker)' };
}

/**
 * Create the OpenAI-compatible provider. The key is resolved once, from the options or the worker's
 * environment.
 *
 * ```ts
 * const openai = createOpenAiProvider({ apiKey: 'sk-test' });
 * const res = await callLlm(openai, req, { provider: 'openai', model: 'gpt-4o-mini', baseUrl: 'http://127.0.0.1:8000/v1' });
 * ```
 */
export function createOpenAiProvider(opts: OpenAiProviderOptions = {}): LlmProvider<OpenAiSpec> {
  const { apiKey, credential } = resolveKey(opts);
  const ownBaseUrl = openAiBaseUrl(opts);
  return {
    preflight: (spec) => openAiSetupProblem(spec, opts),
    async generate(req, spec, { signal }) {
      const target = { model: spec.model, baseUrl: spec.baseUrl ?? ownBaseUrl };
      let url: URL;
      try {
        url = new URL(`${target.baseUrl.replace(/\/+$/, '')}/chat/completions`);
        if (url.protocol !== 'http:' && url.protocol !== 'https:')
          throw new Error(`unsupported protocol ${url.protocol}`);
      } catch (err) {
        throw LlmError.of({
          code: 'EINVAL',
          kind: 'execution',
          source: SOURCE,
          message: `the base URL "${target.baseUrl}" in the --llm spec is not an http(s) URL: ${(err as Error).message}`,
          suggestion: 'Use openai:MODEL@BASE_URL, e.g. openai:gpt-4o-mini@https://api.openai.com/v1.',
        });
      }
      const body = toOpenAiRequest(req, target);
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
      // The key is bound to the worker's endpoint: any other base URL (allowed by the policy) gets none.
      if (apiKey && sameEndpoint(target.baseUrl, ownBaseUrl)) headers.authorization = `Bearer ${apiKey}`;

      let res: Response;
      let text: string;
      try {
        // No redirects: an allowed host must not forward the call (and its body) to one the policy never saw.
        res = await fetch(
          url,
          withoutUndiciTimeouts({ method: 'POST', headers, body: JSON.stringify(body), signal, redirect: 'manual' }),
        );
        text = await res.text();
      } catch (err) {
        const network = classifyNetworkError(err, SOURCE);
        // The origin and undici's hidden reason say which server could not be reached, and why.
        throw network
          ? new LlmError({ ...network, message: `${url.origin}: ${network.message}${causeText(err)}` }, undefined, {
              cause: err,
            })
          : err;
      }
      if (res.status >= 300 && res.status < 400) {
        throw LlmError.of({
          code: 'EINVAL',
          kind: 'fatal',
          source: SOURCE,
          message: `${url.origin} answered ${res.status}, a redirect${res.headers.get('location') ? ` to ${res.headers.get('location')}` : ''}; LLM calls do not follow redirects`,
          suggestion:
            "Use the final URL as the base URL of the --llm spec (and in the worker policy's llmAllow), then unlock the agent.",
        });
      }
      if (res.status < 200 || res.status >= 300) {
        const error = classifyHttpStatus({
          status: res.status,
          message: providerMessage(text, res.status),
          source: SOURCE,
          credential,
        });
        throw new LlmError(error, retryAfterMs(res.headers, Date.now()));
      }
      try {
        const promptChars = req.messages.reduce((n, m) => n + ('text' in m && m.text ? m.text.length : 0), 0);
        return fromOpenAiResponse(JSON.parse(text), { tools: req.tools, callNumber: req.callNumber, promptChars });
      } catch (err) {
        // A proxy's error page or a truncated body: worth another attempt, and the message says what came.
        throw LlmError.of(
          {
            code: 'E_UNAVAILABLE',
            kind: 'transient',
            source: SOURCE,
            message: `${url.origin} answered ${res.status} with something that is not a chat completion (${(err as Error).message}): ${text.slice(0, 200)}`,
          },
          { cause: err },
        );
      }
    },
  };
}

/**
 * The problem with `spec` on this worker, or undefined: a base URL that is not a URL, or api.openai.com
 * without a key bound to it (a local server needs none). Contacts nothing.
 */
function openAiSetupProblem(spec: OpenAiSpec, options: OpenAiProviderOptions): string | undefined {
  const own = openAiBaseUrl(options);
  const baseUrl = spec.baseUrl ?? own;
  const shown = `--llm openai:${spec.model}${spec.baseUrl ? `@${spec.baseUrl}` : ''}`;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return `${shown}: the base URL ${baseUrl} is not a URL (e.g. https://api.openai.com/v1)`;
  }
  if (url.hostname === 'api.openai.com' && !(resolveKey(options).apiKey && sameEndpoint(baseUrl, own))) {
    return `${shown}: api.openai.com needs an API key: set OPENAI_API_KEY (or STARRY_OPENAI_API_KEY) where the worker runs${sameEndpoint(baseUrl, own) ? '' : `, for the base URL in OPENAI_BASE_URL (the worker's key goes only there; it is ${own})`}`;
  }
  return undefined;
}

/** undici reports "fetch failed" and hides the reason in `cause`. */
function causeText(err: unknown): string {
  const cause = (err as { cause?: { message?: unknown } }).cause;
  return typeof cause?.message === 'string' && cause.message ? ` (${cause.message})` : '';
}
