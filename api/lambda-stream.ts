/**
 * The HTTP API on AWS Lambda behind a function URL with response streaming (infra/http-api.ts, output
 * `StreamUrl`): an API Gateway HTTP API hands a response on only once it has ended, so the live event
 * routes (text/event-stream) are served here, written to the caller as the app writes them. The same
 * app, secrets and Temporal connection as api/lambda.ts (api/lambda-app.ts); the app checks the bearer
 * JWT itself, as it does behind API Gateway. An invocation ends at the function's timeout (15 minutes
 * at most): an event stream then closes and its client reconnects with `Last-Event-ID`.
 */
import type { Writable } from 'node:stream';
import { streamHandle, type LambdaContext, type LambdaEvent } from 'hono/aws-lambda';
import { containerApp } from './lambda-app';

/** A response-streaming handler as the Lambda Node.js runtime calls it. */
export type StreamingHandler = (
  event: LambdaEvent,
  responseStream: Writable,
  context: LambdaContext & { callbackWaitsForEmptyEventLoop: boolean },
) => Promise<void>;

/** What a function URL reads first from a streamed response: the status, headers and cookies. */
export interface HttpResponsePrelude {
  statusCode: number;
  headers?: Record<string, string>;
  cookies?: string[];
}

declare global {
  /** Its members are defined by the Lambda Node.js runtime before it loads the handler's module (not elsewhere). */
  var awslambda:
    | {
        streamifyResponse?(handler: StreamingHandler, options?: { highWaterMark?: number }): StreamingHandler;
        HttpResponseStream?: { from(stream: Writable, prelude: HttpResponsePrelude): Writable };
      }
    | undefined;
}

/**
 * A response-streaming Lambda handler serving `app()`'s app: the status and headers first, then the
 * body as the app writes it.
 *
 * ```ts
 * export const handler = streamingHandler(containerApp);
 * ```
 */
export function streamingHandler(app: () => ReturnType<typeof containerApp>): StreamingHandler {
  const runtime = globalThis.awslambda;
  // The AWS SDK sets `awslambda` to {} where the runtime has not defined it.
  if (typeof runtime?.streamifyResponse !== 'function')
    throw new Error(
      'the awslambda global is missing: api/lambda-stream.ts runs on the AWS Lambda Node.js runtime, which defines it ' +
        '(unless AWS_LAMBDA_NODEJS_NO_GLOBAL_AWSLAMBDA is set); to serve the API elsewhere, run `starry api`',
    );
  return runtime.streamifyResponse(async (event, responseStream, context) => {
    // The container's Temporal connection stays open between invocations: waiting for an empty event
    // loop would hold each invocation, once its response has ended, until the function's timeout.
    context.callbackWaitsForEmptyEventLoop = false;
    const serve = streamHandle(await app()) as unknown as StreamingHandler;
    await serve(event, responseStream, context);
  });
}

/**
 * The Lambda handler (function URL, `InvokeMode.RESPONSE_STREAM`, payload format 2.0).
 *
 * ```ts
 * // infra/http-api.ts: new NodejsFunction(this.stack, 'ApiStreamFunction', { entry: 'api/lambda-stream.ts', handler: 'handler' })
 * //   .addFunctionUrl({ authType: FunctionUrlAuthType.NONE, invokeMode: InvokeMode.RESPONSE_STREAM });
 * ```
 */
export const handler = streamingHandler(containerApp);
