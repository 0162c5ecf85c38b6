/**
 * Local HTTP servers that speak the real LLM wire formats (OpenAI chat completions, Vertex AI
 * generateContent, Bedrock Converse), for the provider tests: the providers under test use their real
 * HTTP clients (fetch, `@google/genai`, `@aws-sdk/client-bedrock-runtime`), nothing of ours is mocked. Each server records what it received and whether
 * the client hung up before the answer (a cancelled call).
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

/** A JSON request body, loosely typed: each test knows the wire format it speaks. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a wire body is whatever the client sent
export type WireBody = Record<string, any>;

/** One request as the server saw it. */
export interface FakeRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The JSON body (undefined when it did not parse); tests read it as the wire format they expect. */
  body: WireBody | undefined;
  receivedAt: number;
  /** True when the client closed the connection before the answer was sent. */
  aborted: boolean;
}

/** What the server answers. `delayMs` holds the answer back (a slow model). */
export interface FakeReply {
  status?: number;
  headers?: Record<string, string>;
  json?: unknown;
  text?: string;
  delayMs?: number;
}

export interface FakeServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  requests: FakeRequest[];
  /** Resolve once `n` requests arrived (or reject after `timeoutMs`). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Resolve once a request matching `match` arrived; its index in `requests`. */
  waitForRequest(match: (req: FakeRequest) => boolean, timeoutMs?: number): Promise<number>;
  /** Resolve once request `index` was aborted by the client (or reject after `timeoutMs`). */
  waitForAbort(index: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Start a server on 127.0.0.1 and a free port; `handler` decides each answer. `http2`: the server speaks
 * HTTP/2 without TLS (prior knowledge), as the AWS SDK's Bedrock Runtime client does to an http:// endpoint.
 *
 * ```ts
 * const server = await startFakeServer(() => ({ json: openAiCompletion({ text: 'Done.' }) }));
 * ```
 */
export async function startFakeServer(
  handler: (req: FakeRequest, index: number) => FakeReply | Promise<FakeReply>,
  opts: { http2?: boolean } = {},
): Promise<FakeServer> {
  const requests: FakeRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const serve = (
    req: http.IncomingMessage | http2.Http2ServerRequest,
    res: http.ServerResponse | http2.Http2ServerResponse,
  ) => {
    // The two APIs differ in how a response tells it was sent, or its connection is gone.
    const sent = () => ('stream' in res ? res.writableEnded : res.writableFinished);
    const gone = () => ('stream' in res ? res.stream.destroyed : res.destroyed);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: WireBody | undefined;
      try {
        body = raw ? (JSON.parse(raw) as WireBody) : undefined;
      } catch {
        body = undefined;
      }
      const seen: FakeRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        receivedAt: Date.now(),
        aborted: false,
      };
      const index = requests.push(seen) - 1;
      res.on('close', () => {
        if (!sent()) seen.aborted = true;
      });
      const reply = await handler(seen, index);
      const send = () => {
        if (gone()) return;
        const payload = reply.json !== undefined ? JSON.stringify(reply.json) : (reply.text ?? '');
        const type = reply.json !== undefined ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8';
        res.writeHead(reply.status ?? 200, { 'content-type': type, ...reply.headers });
        res.end(payload);
      };
      if (reply.delayMs) {
        const t = setTimeout(() => {
          timers.delete(t);
          send();
        }, reply.delayMs);
        timers.add(t);
      } else send();
    });
  };
  const server = opts.http2 ? http2.createServer(serve) : http.createServer(serve);
  server.on('session', (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const poll = (done: () => boolean, timeoutMs: number, what: string) =>
    new Promise<void>((resolve, reject) => {
      const end = Date.now() + timeoutMs;
      const tick = () => {
        if (done()) return resolve();
        if (Date.now() > end) return reject(new Error(`fake server: timed out waiting for ${what}`));
        setTimeout(tick, 20);
      };
      tick();
    });

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    waitForRequests: (n, timeoutMs = 10_000) => poll(() => requests.length >= n, timeoutMs, `${n} request(s)`),
    async waitForRequest(match, timeoutMs = 10_000) {
      await poll(() => requests.some(match), timeoutMs, 'a matching request');
      return requests.findIndex(match);
    },
    waitForAbort: (i, timeoutMs = 10_000) =>
      poll(() => requests[i]?.aborted === true, timeoutMs, `request #${i} to be aborted`),
    async close() {
      for (const t of timers) clearTimeout(t);
      if ('closeAllConnections' in server) server.closeAllConnections();
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// OpenAI chat completions.

/**
 * A chat completion body, as OpenAI (and vLLM, llama.cpp, Ollama) send it.
 *
 * ```ts
 * openAiCompletion({ toolCalls: [{ id: 'call_1', name: 'fs_read', arguments: '{"path":"notes.md"}' }], usage: { prompt: 100, completion: 10 } })
 * ```
 */
export function openAiCompletion(a: {
  text?: string | null;
  toolCalls?: Array<{ id: string; name: string; arguments: string }>;
  usage?: { prompt: number; completion: number };
  model?: string;
}): unknown {
  const message: Record<string, unknown> = { role: 'assistant', content: a.text ?? null };
  if (a.toolCalls?.length) {
    message.tool_calls = a.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return {
    id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: a.model ?? 'fake-model',
    choices: [{ index: 0, message, finish_reason: a.toolCalls?.length ? 'tool_calls' : 'stop' }],
    ...(a.usage
      ? {
          usage: {
            prompt_tokens: a.usage.prompt,
            completion_tokens: a.usage.completion,
            total_tokens: a.usage.prompt + a.usage.completion,
          },
        }
      : {}),
  };
}

/** An OpenAI error reply: `{ error: { message, type, code } }`. */
export function openAiError(status: number, message: string, headers: Record<string, string> = {}): FakeReply {
  const type =
    status === 401
      ? 'invalid_request_error'
      : status === 429
        ? 'rate_limit_exceeded'
        : status >= 500
          ? 'server_error'
          : 'invalid_request_error';
  return {
    status,
    headers,
    json: { error: { message, type, param: null, code: status === 401 ? 'invalid_api_key' : null } },
  };
}

// ---------------------------------------------------------------------------------------------------
// Vertex AI generateContent.

/** The model name in a Vertex `…/publishers/google/models/MODEL:generateContent` path. */
export function vertexModelOf(path: string): string | undefined {
  return /\/publishers\/google\/models\/([^/:?]+):generateContent/.exec(path)?.[1];
}

/**
 * A generateContent response body, as Vertex AI sends it.
 *
 * ```ts
 * geminiResponse({ parts: [{ functionCall: { name: 'fs.read', args: { path: 'notes.md' } }, thoughtSignature: 'c2ln' }], usage: { prompt: 100, candidates: 10 } })
 * ```
 */
export function geminiResponse(a: {
  parts: unknown[];
  usage?: { prompt: number; candidates: number; thoughts?: number };
  finishReason?: string;
}): unknown {
  return {
    candidates: [
      { content: { role: 'model', parts: a.parts }, finishReason: a.finishReason ?? 'STOP', avgLogprobs: -0.1 },
    ],
    ...(a.usage
      ? {
          usageMetadata: {
            promptTokenCount: a.usage.prompt,
            candidatesTokenCount: a.usage.candidates,
            ...(a.usage.thoughts ? { thoughtsTokenCount: a.usage.thoughts } : {}),
            totalTokenCount: a.usage.prompt + a.usage.candidates + (a.usage.thoughts ?? 0),
            trafficType: 'ON_DEMAND',
          },
        }
      : {}),
    modelVersion: 'gemini-fake',
    createTime: new Date().toISOString(),
    responseId: Math.random().toString(36).slice(2),
  };
}

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

/** A Google API error reply: `{ error: { code, message, status, details? } }`; `reason` adds a google.rpc.ErrorInfo. */
export function geminiError(
  status: number,
  message: string,
  headers: Record<string, string> = {},
  reason?: string,
): FakeReply {
  const details = reason
    ? [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason,
          domain: 'googleapis.com',
          metadata: { service: 'aiplatform.googleapis.com' },
        },
      ]
    : undefined;
  return {
    status,
    headers,
    json: {
      error: { code: status, message, status: GOOGLE_STATUS[status] ?? 'UNKNOWN', ...(details ? { details } : {}) },
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Bedrock Converse.

/** The model id in a Converse `POST /model/MODEL_ID/converse` path (the SDK escapes it). */
export function bedrockModelOf(path: string): string | undefined {
  const m = /^\/model\/([^/?]+)\/converse(?:\?|$)/.exec(path)?.[1];
  return m === undefined ? undefined : decodeURIComponent(m);
}

/**
 * A Converse response body, as Bedrock sends it.
 *
 * ```ts
 * bedrockResponse({ content: [{ toolUse: { toolUseId: 'tooluse_1', name: 'fs_read', input: { path: 'notes.md' } } }], stopReason: 'tool_use', usage: { input: 100, output: 10 } })
 * ```
 */
export function bedrockResponse(a: {
  content: unknown[];
  stopReason?: string;
  usage?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
}): unknown {
  const u = a.usage ?? { input: 0, output: 0 };
  return {
    output: { message: { role: 'assistant', content: a.content } },
    stopReason: a.stopReason ?? 'end_turn',
    usage: {
      inputTokens: u.input,
      outputTokens: u.output,
      totalTokens: u.input + u.output + (u.cacheRead ?? 0) + (u.cacheWrite ?? 0),
      ...(u.cacheRead !== undefined ? { cacheReadInputTokens: u.cacheRead } : {}),
      ...(u.cacheWrite !== undefined ? { cacheWriteInputTokens: u.cacheWrite } : {}),
    },
    metrics: { latencyMs: 420 },
  };
}

/** A Bedrock error reply: the exception's name in `x-amzn-errortype`, `{ message }` as the body. */
export function bedrockError(status: number, type: string, message: string): FakeReply {
  return {
    status,
    headers: {
      'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
      'x-amzn-requestid': 'fake-request-id',
    },
    json: { message },
  };
}
