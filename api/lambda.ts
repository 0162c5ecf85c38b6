/**
 * The HTTP API on AWS Lambda behind an API Gateway HTTP API (payload v2), through Hono's adapter. The
 * app, its secrets and its Temporal connection are the container's (api/lambda-app.ts), shared with the
 * streaming entry (api/lambda-stream.ts). No route logic here: it is the same app as `starry api`.
 */
import { handle, type LambdaContext, type LambdaEvent } from 'hono/aws-lambda';
import { containerApp } from './lambda-app';

export { connectionsOpened, secretsReadCount } from './lambda-app';

/**
 * The Lambda handler (API Gateway HTTP API, payload format 2.0).
 *
 * ```ts
 * // infra/http-api.ts: new NodejsFunction(this.stack, 'ApiFunction', { entry: 'api/lambda.ts', handler: 'handler' })
 * const res = await handler(apiGatewayV2Event, context); // { statusCode, headers, body }
 * ```
 */
export async function handler(event: LambdaEvent, context: LambdaContext) {
  return handle(await containerApp())(event, context);
}
