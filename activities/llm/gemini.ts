/**
 * Gemini through `@google/genai`, on Vertex AI by default (project and location, Application Default
 * Credentials or an API key), or on the Gemini Developer API when `GOOGLE_GENAI_USE_VERTEXAI=false`.
 * Credentials come only from the worker (options or environment). The SDK's own retries stay off
 * (no `retryOptions`): Temporal's retry policy is the only one, so attempts and backoff show in history.
 */
import { ApiError, GoogleGenAI, type Content, type GenerateContentResponse, type Part, type Tool } from '@google/genai';
import { normalizedError, type NormalizedError } from '../../core/errors';
import type { ChatMessage, LlmResponse, LlmToolCall, ToolSpec } from '../../core/llm';
import type { LlmSpec } from '../../core/llm-spec';
import { classifyHttpStatus, classifyNetworkError, retryAfterMs } from '../../core/errors/http';
import { LlmError } from '../../core/errors/activity';
import { withoutUndiciTimeouts } from './in-flight';
import type { LlmProvider } from './provider';
import { providerMessage } from './provider-message';

const SOURCE = 'llm gemini';

/** Options of the Gemini provider; anything absent is read from the worker's environment. */
export interface GeminiProviderOptions {
  /** Vertex AI (default) or the Gemini Developer API. Default: `GOOGLE_GENAI_USE_VERTEXAI` (`false` turns it off). */
  vertexai?: boolean;
  /** Default `GOOGLE_CLOUD_PROJECT`. */
  project?: string;
  /** Default `GOOGLE_CLOUD_LOCATION`, else `global`. */
  location?: string;
  /** Default `GOOGLE_API_KEY`, else `GEMINI_API_KEY`. With a project from the environment, ADC wins (as in the SDK). */
  apiKey?: string;
  /** The endpoint, for tests and private endpoints. Default `STARRY_GEMINI_BASE_URL`, else Google's. */
  baseUrl?: string;
  /** The environment to read; default `process.env`. */
  env?: Record<string, string | undefined>;
}

/** How the worker will reach Gemini, or why it cannot. */
export type GeminiSetup =
  | {
      ok: true;
      client: { vertexai: boolean; project?: string; location?: string; apiKey?: string; baseUrl?: string };
      credential: string;
      usesAdc: boolean;
    }
  | { ok: false; message: string };

/**
 * Resolve the Gemini settings from options and environment, without contacting anything.
 *
 * ```ts
 * resolveGeminiSetup({ env: { GOOGLE_CLOUD_PROJECT: 'my-proj' } })
 * // { ok: true, client: { vertexai: true, project: 'my-proj', location: 'global' }, credential: 'Application Default Credentials (project my-proj)', usesAdc: true }
 * ```
 */
export function resolveGeminiSetup(opts: GeminiProviderOptions = {}): GeminiSetup {
  const env = opts.env ?? process.env;
  const read = (name: string) => env[name]?.trim() || undefined;
  const vertexai = opts.vertexai ?? read('GOOGLE_GENAI_USE_VERTEXAI')?.toLowerCase() !== 'false';
  const baseUrl = opts.baseUrl ?? read('STARRY_GEMINI_BASE_URL');
  const envKeyName = read('GOOGLE_API_KEY') ? 'GOOGLE_API_KEY' : read('GEMINI_API_KEY') ? 'GEMINI_API_KEY' : undefined;
  const withBase = <T extends object>(c: T) => (baseUrl ? { ...c, baseUrl } : c);

  if (!vertexai) {
    if (opts.apiKey)
      return {
        ok: true,
        client: withBase({ vertexai, apiKey: opts.apiKey }),
        credential: 'the Gemini API key configured on the worker',
        usesAdc: false,
      };
    if (envKeyName)
      return {
        ok: true,
        client: withBase({ vertexai, apiKey: read(envKeyName) }),
        credential: `the API key in ${envKeyName}`,
        usesAdc: false,
      };
    return {
      ok: false,
      message:
        'the Gemini Developer API (GOOGLE_GENAI_USE_VERTEXAI=false) needs an API key: set GEMINI_API_KEY or GOOGLE_API_KEY on the worker',
    };
  }

  const project = opts.project ?? read('GOOGLE_CLOUD_PROJECT');
  const location = opts.location ?? read('GOOGLE_CLOUD_LOCATION') ?? 'global';
  if (opts.apiKey) {
    return {
      ok: true,
      client: withBase({ vertexai, apiKey: opts.apiKey, ...(project ? { project, location } : {}) }),
      credential: 'the Vertex AI API key configured on the worker',
      usesAdc: false,
    };
  }
  if (project) {
    // A project wins over an API key from the environment, as in the SDK: ADC for that project.
    return {
      ok: true,
      client: withBase({ vertexai, project, location }),
      credential: `Application Default Credentials (project ${project})`,
      usesAdc: true,
    };
  }
  if (envKeyName)
    return {
      ok: true,
      client: withBase({ vertexai, apiKey: read(envKeyName) }),
      credential: `the Vertex AI API key in ${envKeyName}`,
      usesAdc: false,
    };
  return {
    ok: false,
    message:
      'Gemini on Vertex AI needs GOOGLE_CLOUD_PROJECT (with Application Default Credentials: `gcloud auth application-default login`) ' +
      'or a Vertex AI API key in GOOGLE_API_KEY, set on the worker',
  };
}

// ---------------------------------------------------------------------------------------------------
// Mapping.

/**
 * Declare the tool registry's tools: their JSON Schemas go in `parametersJsonSchema` unchanged (Gemini
 * accepts tool names with dots).
 *
 * ```ts
 * toGeminiTools(toolSpecs()) // [{ functionDeclarations: [{ name: 'fs.read', description, parametersJsonSchema }, …] }]
 * ```
 */
export function toGeminiTools(tools: readonly ToolSpec[]): Tool[] {
  if (!tools.length) return [];
  return [
    {
      functionDeclarations: tools.map((t) => ({
        name: t.name,
        description: t.description,
        parametersJsonSchema: t.parameters,
      })),
    },
  ];
}

/**
 * Map the conversation to Gemini contents: system → `systemInstruction`; assistant → role `model` with
 * the model's own parts when present (so `thoughtSignature` goes back untouched); consecutive tool
 * results → one `user` content of `functionResponse` parts.
 *
 * ```ts
 * const { systemInstruction, contents } = toGeminiContents(req.messages);
 * ```
 */
export function toGeminiContents(messages: readonly ChatMessage[]): {
  systemInstruction?: Content;
  contents: Content[];
} {
  const system: Part[] = [];
  const contents: Content[] = [];
  // Ids the model itself gave its calls: only those may be echoed in functionResponse.id.
  const modelIds = new Set<string>();
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const p of (m.providerParts ?? []) as Part[]) if (p?.functionCall?.id) modelIds.add(p.functionCall.id);
  }

  for (const m of messages) {
    switch (m.role) {
      case 'system':
        system.push({ text: m.text });
        break;
      case 'user':
        contents.push({ role: 'user', parts: [{ text: m.text }] });
        break;
      case 'assistant': {
        const parts = m.providerParts?.length ? (m.providerParts as Part[]) : assistantParts(m.text, m.toolCalls);
        if (parts.length) contents.push({ role: 'model', parts });
        break;
      }
      case 'tool': {
        const part: Part = {
          functionResponse: {
            ...(modelIds.has(m.callId) ? { id: m.callId } : {}),
            name: m.name,
            response: { result: m.text },
          },
        };
        const last = contents.at(-1);
        if (last?.role === 'user' && last.parts?.every((p) => p.functionResponse)) last.parts.push(part);
        else contents.push({ role: 'user', parts: [part] });
        break;
      }
    }
  }
  return system.length ? { systemInstruction: { parts: system }, contents } : { contents };
}

function assistantParts(text: string | undefined, calls: LlmToolCall[] | undefined): Part[] {
  const parts: Part[] = text ? [{ text }] : [];
  for (const c of calls ?? [])
    parts.push({ functionCall: { name: c.name, args: (c.args ?? {}) as Record<string, unknown> } });
  return parts;
}

/** What one generateContent answer means: a response, or a failure of the call. */
export type GeminiAnswer = { ok: true; response: LlmResponse } | { ok: false; error: NormalizedError };

const NORMAL_FINISH = new Set(['STOP', 'MAX_TOKENS', 'FINISH_REASON_UNSPECIFIED']);

/**
 * Read a generateContent response: text (thoughts left out), function calls as tool calls, the model's
 * parts kept as `providerParts`, usage from `usageMetadata` (thinking and tool-use prompt tokens
 * included, since they are billed).
 *
 * ```ts
 * const answer = fromGeminiResponse(await ai.models.generateContent(params), { callNumber: 1 });
 * ```
 */
export function fromGeminiResponse(
  resp: Pick<GenerateContentResponse, 'candidates' | 'usageMetadata' | 'promptFeedback'>,
  ctx: { callNumber: number },
): GeminiAnswer {
  const candidate = resp.candidates?.[0];
  const parts = candidate?.content?.parts ?? [];
  if (!candidate || (parts.length === 0 && candidate.finishReason && !NORMAL_FINISH.has(candidate.finishReason))) {
    const { blockReason, blockReasonMessage } = resp.promptFeedback ?? {};
    const blocked = blockReason
      ? ` (prompt blocked: ${[blockReason, blockReasonMessage].filter(Boolean).join(', ')})`
      : '';
    const why = candidate
      ? `finished with ${candidate.finishReason}${candidate.finishMessage ? `: ${candidate.finishMessage}` : ''}`
      : `returned no candidate${blocked}`;
    return {
      ok: false,
      error: normalizedError({
        code: 'EINVAL',
        kind: 'execution',
        source: SOURCE,
        message: `Gemini ${why} and no content`,
      }),
    };
  }
  const texts = parts.filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text as string);
  const toolCalls: LlmToolCall[] = parts
    .filter((p) => p.functionCall)
    .map((p, i) => ({
      id: p.functionCall?.id || `call-${ctx.callNumber}-${i + 1}`,
      name: p.functionCall?.name ?? '',
      args: p.functionCall?.args ?? {},
    }));
  const u = resp.usageMetadata ?? {};
  const response: LlmResponse = {
    toolCalls,
    usage: {
      inputTokens: (u.promptTokenCount ?? 0) + (u.toolUsePromptTokenCount ?? 0),
      outputTokens: (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0),
      // Part of promptTokenCount: the implicit (or explicit) context cache's share, billed at its cached rate.
      ...(u.cachedContentTokenCount !== undefined ? { cachedInputTokens: u.cachedContentTokenCount } : {}),
    },
  };
  if (texts.length) response.text = texts.join('');
  if (parts.length) response.providerParts = parts;
  return { ok: true, response };
}

// ---------------------------------------------------------------------------------------------------
// The provider.

/** The spec this provider serves: `gemini:MODEL`. */
export type GeminiSpec = Extract<LlmSpec, { provider: 'gemini' }>;

/**
 * Create the Gemini provider. Settings are resolved once; the SDK client is created on first use, so a
 * worker without Gemini credentials still starts (and a Gemini task fails with a clear, fatal error).
 *
 * ```ts
 * const gemini = createGeminiProvider({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'k', project: 'p', location: 'us-central1' });
 * const res = await callLlm(gemini, req, { provider: 'gemini', model: 'gemini-2.5-flash' });
 * ```
 */
export function createGeminiProvider(opts: GeminiProviderOptions = {}): LlmProvider<GeminiSpec> {
  const setup = resolveGeminiSetup(opts);
  let ai: GoogleGenAI | undefined;

  return {
    preflight: (spec) => (setup.ok ? undefined : `--llm gemini:${spec.model}: ${setup.message}`),
    async generate(req, { model }, { signal }) {
      if (!setup.ok) throw LlmError.of({ code: 'E_AUTH', kind: 'fatal', source: SOURCE, message: setup.message });
      const { baseUrl, ...client } = setup.client;
      try {
        // No retryOptions: the SDK then makes exactly one attempt (Temporal retries).
        ai ??= new GoogleGenAI({ ...client, ...(baseUrl ? { httpOptions: { baseUrl } } : {}) });
      } catch (err) {
        throw LlmError.of(
          {
            code: 'E_AUTH',
            kind: 'fatal',
            source: SOURCE,
            message: `cannot set up the Gemini client: ${(err as Error).message}`,
          },
          { cause: err },
        );
      }

      // Per call, so concurrent calls do not share: whether the request left, and its response headers
      // (ApiError carries only the status, and Retry-After is in the headers).
      const seen: { sent: boolean; headers?: Headers } = { sent: false };
      const callFetch = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
        seen.sent = true;
        const res = await fetch(input, withoutUndiciTimeouts(init ?? {}));
        seen.headers = res.headers;
        return res;
      };
      const { systemInstruction, contents } = toGeminiContents(req.messages);
      const tools = toGeminiTools(req.tools);
      let resp: GenerateContentResponse;
      try {
        resp = await ai.models.generateContent({
          model,
          contents,
          config: {
            ...(systemInstruction ? { systemInstruction } : {}),
            ...(tools.length ? { tools } : {}),
            maxOutputTokens: req.maxOutputTokens,
            abortSignal: signal,
            httpOptions: { fetch: callFetch },
          },
        });
      } catch (err) {
        const error = geminiFailure(err, { sent: seen.sent, credential: setup.credential, usesAdc: setup.usesAdc });
        throw new LlmError(error, seen.headers ? retryAfterMs(seen.headers, Date.now()) : undefined, { cause: err });
      }
      const answer = fromGeminiResponse(resp, { callNumber: req.callNumber });
      if (!answer.ok) throw new LlmError(answer.error);
      return answer.response;
    },
  };
}

/**
 * Classify what the SDK threw: an HTTP error (ApiError), a network error, a failure before the request
 * left (building it or getting credentials: a configuration problem, fatal), or a bad answer.
 */
export function geminiFailure(
  err: unknown,
  ctx: { sent: boolean; credential: string; usesAdc: boolean },
): NormalizedError {
  if (err instanceof ApiError) {
    // Google answers a bad API key with 400 INVALID_ARGUMENT; its ErrorInfo reason says it is the key.
    const credentialRejected = googleErrorReasons(err.message).includes('API_KEY_INVALID');
    const authFailure = credentialRejected || err.status === 401 || err.status === 403;
    return classifyHttpStatus({
      status: err.status,
      message: providerMessage(err.message, err.status),
      source: SOURCE,
      credential: ctx.credential,
      credentialRejected,
      ...(authFailure ? { suggestion: authSuggestion(ctx) } : {}),
    });
  }
  const network = classifyNetworkError(err, SOURCE);
  const message = err instanceof Error ? err.message : String(err);
  if (network) return network;
  if (!ctx.sent) {
    return normalizedError({
      code: ctx.usesAdc ? 'E_AUTH' : 'E_INTERNAL',
      kind: 'fatal',
      source: SOURCE,
      message: ctx.usesAdc
        ? `cannot get ${ctx.credential}: ${message}`
        : `the Gemini request could not be prepared: ${message}`,
      suggestion: ctx.usesAdc
        ? 'Run `gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS) where the worker runs, then unlock the agent.'
        : undefined,
    });
  }
  // The request left and something unreadable came back: another attempt may do better.
  return normalizedError({
    code: 'E_UNAVAILABLE',
    kind: 'transient',
    source: SOURCE,
    message: `Gemini answered with something unreadable: ${message}`,
  });
}

/** What to check when Google refused the credential: the likely mix-ups differ by credential. */
function authSuggestion(ctx: { credential: string; usesAdc: boolean }): string {
  if (ctx.usesAdc) {
    return `Check ${ctx.credential}: run \`gcloud auth application-default login\` where the worker runs, and give the principal the Vertex AI User role on the project; then unlock the agent.`;
  }
  return `Check ${ctx.credential} on the worker. A Vertex AI key belongs to a Google Cloud project; a Gemini Developer API key (from AI Studio) needs GOOGLE_GENAI_USE_VERTEXAI=false. Then unlock the agent.`;
}

/** The `google.rpc.ErrorInfo` reasons in a Google API error body (the SDK puts the body in the message). */
function googleErrorReasons(body: string): string[] {
  try {
    const details =
      (JSON.parse(body) as { error?: { details?: Array<{ '@type'?: string; reason?: unknown }> } }).error?.details ??
      [];
    return details
      .filter((d) => d['@type']?.endsWith('google.rpc.ErrorInfo') && typeof d.reason === 'string')
      .map((d) => d.reason as string);
  } catch {
    return [];
  }
}
