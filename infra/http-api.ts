/**
 * The HTTP API on Lambda (api/lambda.ts, bundled with the local esbuild: no Docker) behind an API Gateway
 * HTTP API, and its streaming entry (api/lambda-stream.ts) behind a function URL: the same app, secrets
 * and role grants, each its own function.
 *
 * ```ts
 * const api = new StarryApi(stack, 'ApiPart', { temporalAddress, temporalNamespace, secrets, tracing: true, projectRoot, retention });
 * api.httpApi.apiEndpoint;
 * ```
 */
import path from 'node:path';
import { CfnOutput, Duration, RemovalPolicy } from 'aws-cdk-lib';
import { type CfnStage, HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { FunctionUrlAuthType, HttpMethod, InvokeMode, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { LAMBDA_BUNDLING, LAMBDA_LOGS_FINDING } from './lambda';
import type { StarrySecrets } from './secrets';
import { StackPart } from './stack-part';

export interface StarryApiProps {
  temporalAddress: string;
  temporalNamespace: string;
  /** The JWT secret and Temporal's credentials: both functions read them. */
  secrets: StarrySecrets;
  /** The token claim naming the caller's tenant (STARRY_API_TENANT_CLAIM); unset: one tenant. */
  apiTenantClaim?: string;
  /** X-Ray active tracing of both functions (observability on). */
  tracing: boolean;
  /** The repository root (the functions' entries). */
  projectRoot: string;
  retention: RetentionDays;
}

/** The API Gateway HTTP API and the streaming function URL. */
export class StarryApi extends StackPart {
  readonly httpApi: HttpApi;
  /** The live event routes (GET .../events, text/event-stream) of the same API, streamed. */
  readonly streamUrl: string;

  constructor(scope: Construct, id: string, props: StarryApiProps) {
    super(scope, id);
    const logs = (logsId: string) =>
      new LogGroup(this.stack, logsId, { retention: props.retention, removalPolicy: RemovalPolicy.DESTROY });
    const fn = this.apiFunction(props, 'ApiFunction', 'lambda.ts', Duration.seconds(29), logs('ApiLogs'));
    this.httpApi = new HttpApi(this.stack, 'HttpApi', {
      description: 'OpenStarry on Temporal',
      defaultIntegration: new HttpLambdaIntegration('Api', fn),
    });
    const accessLogs = logs('ApiAccessLogs');
    const stage = this.httpApi.defaultStage?.node.defaultChild as CfnStage;
    stage.accessLogSettings = {
      destinationArn: accessLogs.logGroupArn,
      format: JSON.stringify({
        requestId: '$context.requestId',
        ip: '$context.identity.sourceIp',
        route: '$context.routeKey',
        status: '$context.status',
        latency: '$context.responseLatency',
      }),
    };
    NagSuppressions.addResourceSuppressions(
      this.httpApi,
      [
        {
          id: 'AwsSolutions-APIG4',
          reason:
            'The app authorizes every route but /healthz and /openapi.json itself (bearer JWT with roles, api/auth.ts).',
        },
      ],
      true,
    );
    this.streamUrl = this.streamFunction(props, logs('ApiStreamLogs'));
    new CfnOutput(this.stack, 'ApiUrl', { value: this.httpApi.apiEndpoint });
    new CfnOutput(this.stack, 'StreamUrl', {
      value: this.streamUrl,
      description: 'The live event routes (GET .../events, text/event-stream) of the same API, streamed',
    });
    new CfnOutput(this.stack, 'ApiJwtSecretArn', { value: props.secrets.jwtSecret.secretArn });
  }

  /**
   * The live event routes (text/event-stream) through a function URL with response streaming: an API
   * Gateway HTTP API hands a response on only once it has ended. No AWS auth on the URL: the app checks
   * the bearer JWT of every route but /healthz and /openapi.json itself, as behind API Gateway. A stream
   * ends at the function's timeout (15 minutes, Lambda's cap); its client resumes with Last-Event-ID.
   * Each open stream holds one concurrent execution for as long as it is open.
   */
  private streamFunction(props: StarryApiProps, logGroup: LogGroup): string {
    const fn = this.apiFunction(props, 'ApiStreamFunction', 'lambda-stream.ts', Duration.minutes(15), logGroup);
    return fn.addFunctionUrl({
      authType: FunctionUrlAuthType.NONE,
      invokeMode: InvokeMode.RESPONSE_STREAM,
      cors: {
        // A bearer token, never a cookie, authorizes a call: any origin may make one.
        allowedOrigins: ['*'],
        allowedMethods: [HttpMethod.GET],
        allowedHeaders: ['authorization', 'last-event-id'],
        maxAge: Duration.hours(1),
      },
    }).url;
  }

  /** One of the API's functions: the app at `entry`, reading the JWT secret and Temporal's credentials. */
  private apiFunction(
    props: StarryApiProps,
    id: string,
    entry: string,
    timeout: Duration,
    logGroup: LogGroup,
  ): NodejsFunction {
    const f = new NodejsFunction(this.stack, id, {
      entry: path.join(props.projectRoot, 'api', entry),
      handler: 'handler',
      runtime: Runtime.NODEJS_22_X,
      memorySize: 512,
      timeout,
      logGroup,
      // X-Ray segments of each invocation (sampled: 1 a second and 5% beyond).
      ...(props.tracing ? { tracing: Tracing.ACTIVE } : {}),
      environment: {
        TEMPORAL_ADDRESS: props.temporalAddress,
        TEMPORAL_NAMESPACE: props.temporalNamespace,
        STARRY_API_JWT_SECRET_ARN: props.secrets.jwtSecret.secretArn,
        ...props.secrets.temporalSecretArns,
        ...(props.apiTenantClaim ? { STARRY_API_TENANT_CLAIM: props.apiTenantClaim } : {}),
      },
      bundling: LAMBDA_BUNDLING,
    });
    props.secrets.jwtSecret.grantRead(f);
    for (const secret of props.secrets.temporal) secret.grantRead(f);
    const tracingFinding = {
      id: 'AwsSolutions-IAM5',
      reason: 'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions.',
      appliesTo: ['Resource::*'],
    };
    NagSuppressions.addResourceSuppressions(f, [LAMBDA_LOGS_FINDING, ...(props.tracing ? [tracingFinding] : [])], true);
    return f;
  }
}
