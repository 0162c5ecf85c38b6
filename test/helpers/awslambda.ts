/**
 * The AWS Lambda Node.js runtime's side of response streaming, in-process, as its runtime interface
 * client (aws-lambda-nodejs-runtime-interface-client) defines it: the `awslambda` global it sets before
 * loading a handler's module (src/UserFunction.js), the response stream it hands a streaming handler
 * (src/ResponseStream.js: `setContentType` only before the first write; `_onBeforeFirstWrite` runs
 * before it), `HttpResponseStream.from` (src/HttpResponseStream.js: the JSON prelude, then 8 NUL bytes,
 * then the body), how it awaits the handler (src/Runtime.js, handleOnceStreaming) and its
 * `callbackWaitsForEmptyEventLoop` (src/StreamingContext.js). What arrives is read as a function URL
 * reads it: the prelude's status, headers and cookies, then the body as it was written.
 */
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { HttpResponsePrelude, StreamingHandler } from '../../api/lambda-stream';

const HANDLER_STREAMING = Symbol.for('aws.lambda.runtime.handler.streaming');
const HANDLER_HIGHWATERMARK = Symbol.for('aws.lambda.runtime.handler.streaming.highWaterMark');
const STREAM_RESPONSE = 'response';
const PRELUDE_CONTENT_TYPE = 'application/vnd.awslambda.http-integration-response';
const DELIMITER_LEN = 8;

type Marked = StreamingHandler & { [HANDLER_STREAMING]?: string; [HANDLER_HIGHWATERMARK]?: number };

/**
 * Define `awslambda` as the runtime does; import the handler's module after this. (Kept: what the AWS
 * SDK may have put there, an object of its own, as it does outside Lambda.)
 */
export function installAwsLambdaGlobal(): void {
  globalThis.awslambda = {
    ...globalThis.awslambda,
    streamifyResponse(handler, options) {
      const marked = handler as Marked;
      marked[HANDLER_STREAMING] = STREAM_RESPONSE;
      if (typeof options?.highWaterMark === 'number') marked[HANDLER_HIGHWATERMARK] = options.highWaterMark;
      return marked;
    },
    HttpResponseStream: {
      from(underlying, prelude) {
        const stream = underlying as ResponseStream;
        stream.setContentType(PRELUDE_CONTENT_TYPE);
        const metadataPrelude = JSON.stringify(prelude);
        stream._onBeforeFirstWrite = (write) => {
          write(metadataPrelude);
          write(new Uint8Array(DELIMITER_LEN));
        };
        return stream;
      },
    },
  };
}

/** The runtime's response stream: bytes as they reach Lambda, each write kept apart. */
class ResponseStream extends Writable {
  contentType = 'application/octet-stream';
  _onBeforeFirstWrite?: (write: (chunk: string | Uint8Array) => void) => void;
  readonly writes: Buffer[] = [];
  private started = false;

  setContentType(contentType: string): void {
    if (this.started) throw new Error('Cannot set content-type, too late.');
    this.contentType = contentType;
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    const data =
      typeof chunk === 'string' || Buffer.isBuffer(chunk) || chunk?.constructor === Uint8Array
        ? (chunk as string | Uint8Array)
        : JSON.stringify(chunk);
    if (!this.started && typeof this._onBeforeFirstWrite === 'function')
      this._onBeforeFirstWrite((ch) => super.write(ch));
    this.started = true;
    return super.write(data, encoding as BufferEncoding, callback as (err?: Error | null) => void);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.writes.push(Buffer.from(chunk));
    this.emit('arrived');
    callback();
  }
}

/** A streamed response as a function URL hands it on, so far or whole. */
export interface StreamedResponse {
  /** The response stream's content type: the HTTP integration prelude's when the handler wrote one. */
  contentType: string;
  statusCode?: number;
  headers: Record<string, string>;
  cookies: string[];
  body: string;
  /** The body's writes, in order: more than one when the body was streamed. */
  chunks: string[];
}

function read(stream: ResponseStream): StreamedResponse {
  const all = Buffer.concat(stream.writes);
  if (stream.contentType !== PRELUDE_CONTENT_TYPE)
    return { contentType: stream.contentType, headers: {}, cookies: [], body: all.toString('utf8'), chunks: [] };
  const delimiter = all.indexOf(Buffer.alloc(DELIMITER_LEN));
  if (delimiter < 0) return { contentType: stream.contentType, headers: {}, cookies: [], body: '', chunks: [] };
  const prelude = JSON.parse(all.subarray(0, delimiter).toString('utf8')) as HttpResponsePrelude;
  const bodyStart = delimiter + DELIMITER_LEN;
  const chunks: string[] = [];
  let offset = 0;
  for (const w of stream.writes) {
    const end = offset + w.length;
    if (end > bodyStart && w.length > 0) chunks.push(w.subarray(Math.max(0, bodyStart - offset)).toString('utf8'));
    offset = end;
  }
  return {
    contentType: stream.contentType,
    statusCode: prelude.statusCode,
    headers: prelude.headers ?? {},
    cookies: prelude.cookies ?? [],
    body: all.subarray(bodyStart).toString('utf8'),
    chunks,
  };
}

/** One invocation of a streaming handler, under way. */
export interface StreamingInvocation {
  /**
   * Settles when the runtime would take its next invocation: the handler has returned and its stream
   * has ended. `waitsForEmptyEventLoop`: the handler left `callbackWaitsForEmptyEventLoop` true, so the
   * runtime would first wait for every open handle (a Temporal connection, say) to close.
   */
  done: Promise<StreamedResponse & { waitsForEmptyEventLoop: boolean }>;
  /** What has arrived so far. */
  response(): StreamedResponse;
  /** Resolves once the body so far matches `pattern`; rejects when the invocation ends first, or after `withinMs`. */
  arrived(pattern: RegExp, withinMs?: number): Promise<StreamedResponse>;
}

/** A Lambda context as the runtime builds it for a streaming invocation. */
function streamingContext(functionName: string, timeoutMs: number) {
  let waitForEmptyEventLoop = true;
  const deadline = Date.now() + timeoutMs;
  return {
    get callbackWaitsForEmptyEventLoop() {
      return waitForEmptyEventLoop;
    },
    set callbackWaitsForEmptyEventLoop(value: boolean) {
      waitForEmptyEventLoop = value;
    },
    functionName,
    functionVersion: '$LATEST',
    memoryLimitInMB: '512',
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: '2026/01/01/[$LATEST]0123456789abcdef',
    awsRequestId: `req-${Math.random().toString(36).slice(2)}`,
    invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${functionName}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  };
}

/**
 * Invoke `handler` as the runtime invokes a streaming handler: refused unless it was wrapped with
 * `awslambda.streamifyResponse` (the runtime would call it as a buffered one), failed when it returns
 * no promise or returns before ending its stream.
 *
 * ```ts
 * installAwsLambdaGlobal();
 * const { handler } = await import('../../api/lambda-stream');
 * const res = await invokeStreaming(handler, functionUrlEvent('GET', '/openapi.json')).done;
 * expect(res.statusCode).toBe(200);
 * ```
 */
export function invokeStreaming(
  handler: StreamingHandler,
  event: unknown,
  /** The function's timeout (default 15 minutes): what the context's `getRemainingTimeInMillis` counts down from. */
  opts: { timeoutMs?: number } = {},
): StreamingInvocation {
  const marked = handler as Marked;
  if (marked[HANDLER_STREAMING] !== STREAM_RESPONSE)
    throw new Error(
      'not a streaming handler: the runtime streams only handlers wrapped by awslambda.streamifyResponse',
    );
  const stream = new ResponseStream(
    marked[HANDLER_HIGHWATERMARK] !== undefined ? { highWaterMark: marked[HANDLER_HIGHWATERMARK] } : {},
  );
  const context = streamingContext('starry-api-stream', opts.timeoutMs ?? 15 * 60_000);
  const result: unknown = handler(event as never, stream, context as never);
  let ended = false;
  const done = (async () => {
    if (!(result instanceof Promise)) throw new Error('Streaming does not support non-async handlers.');
    await result;
    if (!stream.writableEnded) throw new Error('Response stream is not finished.');
    await finished(stream);
    return { ...read(stream), waitsForEmptyEventLoop: context.callbackWaitsForEmptyEventLoop };
  })().finally(() => {
    ended = true;
    stream.emit('arrived');
  });
  return {
    done,
    response: () => read(stream),
    arrived: (pattern, withinMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const res = read(stream);
          if (pattern.test(res.body)) return settle(() => resolve(res));
          if (ended)
            settle(() =>
              reject(
                new Error(`the invocation ended with no body matching ${pattern}; body: ${JSON.stringify(res.body)}`),
              ),
            );
        };
        const timer = setTimeout(
          () =>
            settle(() =>
              reject(
                new Error(
                  `no body matching ${pattern} arrived within ${withinMs} ms while the handler ran; body so far: ${JSON.stringify(read(stream).body)}`,
                ),
              ),
            ),
          withinMs,
        );
        const settle = (fn: () => void) => {
          clearTimeout(timer);
          stream.off('arrived', check);
          fn();
        };
        stream.on('arrived', check);
        check();
      }),
  };
}

/** A request time as function URLs give it: `12/Mar/2020:19:03:58 +0000`. */
function clfTime(d: Date): string {
  const [, day, month, year, time] = d.toUTCString().split(' ');
  return `${day}/${month}/${year}:${time} +0000`;
}

/**
 * A Lambda function URL event (payload format 2.0, auth type NONE), as a function URL sends it.
 *
 * ```ts
 * functionUrlEvent('GET', '/v1/agents/a1', { headers: { authorization: `Bearer ${token}` } });
 * ```
 */
export function functionUrlEvent(
  method: string,
  rawPath: string,
  opts: { headers?: Record<string, string>; query?: string; body?: string } = {},
) {
  const urlId = 'a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6';
  const domainName = `${urlId}.lambda-url.eu-west-1.on.aws`;
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: opts.query ?? '',
    headers: {
      host: domainName,
      'x-amzn-trace-id': `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-0123456789abcdef01234567`,
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '443',
      'x-forwarded-for': '203.0.113.7',
      'user-agent': 'jest',
      accept: '*/*',
      ...opts.headers,
    },
    ...(opts.query ? { queryStringParameters: Object.fromEntries(new URLSearchParams(opts.query)) } : {}),
    requestContext: {
      accountId: 'anonymous',
      apiId: urlId,
      domainName,
      domainPrefix: urlId,
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'jest' },
      requestId: `req-${Math.random().toString(36).slice(2)}`,
      routeKey: '$default',
      stage: '$default',
      time: clfTime(now),
      timeEpoch: now.getTime(),
    },
    isBase64Encoded: false,
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  };
}
