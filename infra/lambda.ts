/**
 * What the stack's Lambda functions (the HTTP API's two, the backlog metric's) share: their bundling and
 * the cdk-nag finding every one of them has.
 *
 * ```ts
 * const f = new NodejsFunction(stack, 'Fn', { entry, bundling: LAMBDA_BUNDLING });
 * NagSuppressions.addResourceSuppressions(f, [LAMBDA_LOGS_FINDING], true);
 * ```
 */
import { OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';

/** Bundling of the stack's Lambda functions: the local esbuild (no Docker), CommonJS for Node 22. */
export const LAMBDA_BUNDLING = {
  forceDockerBundling: false,
  format: OutputFormat.CJS,
  target: 'node22',
  // The runtime has AWS SDK v3; the native Temporal worker is never part of a function.
  externalModules: ['@aws-sdk/*', '@temporalio/worker', '@temporalio/core-bridge'],
  minify: true,
  sourceMap: true,
};

/** The managed policy CDK gives a function's role, acknowledged. */
export const LAMBDA_LOGS_FINDING = {
  id: 'AwsSolutions-IAM4',
  reason: 'AWSLambdaBasicExecutionRole only lets the function write its own logs.',
  appliesTo: ['Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole'],
};
