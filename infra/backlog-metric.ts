/**
 * The backlog metric (docs/DEPLOY.md#scaling): every minute a function (infra/backlog/handler.ts) asks
 * Temporal for the backlog of the task queues (DescribeTaskQueue) and publishes it as TaskQueueBacklog,
 * which the worker services scale on (infra/scaling.ts).
 *
 * ```ts
 * new BacklogMetric(stack, 'BacklogPart', { temporalAddress, temporalNamespace, secrets, queues: [TASK_QUEUE], projectRoot, retention });
 * ```
 */
import path from 'node:path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { LAMBDA_BUNDLING, LAMBDA_LOGS_FINDING } from './lambda';
import { METRICS_NAMESPACE } from './metric-names';
import type { StarrySecrets } from './secrets';
import { StackPart } from './stack-part';

export interface BacklogMetricProps {
  temporalAddress: string;
  temporalNamespace: string;
  /** Temporal's credentials: the function reads them. */
  secrets: StarrySecrets;
  /** The task queues whose backlog it publishes. */
  queues: string[];
  /** The repository root (the function's entry). */
  projectRoot: string;
  retention: RetentionDays;
}

/** The function and its schedule. */
export class BacklogMetric extends StackPart {
  readonly function: NodejsFunction;

  constructor(scope: Construct, id: string, props: BacklogMetricProps) {
    super(scope, id);
    const fn = new NodejsFunction(this.stack, 'BacklogFunction', {
      entry: path.join(props.projectRoot, 'infra', 'backlog', 'handler.ts'),
      handler: 'handler',
      runtime: Runtime.NODEJS_22_X,
      memorySize: 256,
      timeout: Duration.seconds(30),
      logGroup: new LogGroup(this.stack, 'BacklogLogs', {
        retention: props.retention,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
      environment: {
        TEMPORAL_ADDRESS: props.temporalAddress,
        TEMPORAL_NAMESPACE: props.temporalNamespace,
        ...props.secrets.temporalSecretArns,
        STARRY_BACKLOG_QUEUES: props.queues.join(','),
        STARRY_METRICS_NAMESPACE: METRICS_NAMESPACE,
      },
      bundling: LAMBDA_BUNDLING,
    });
    this.function = fn;
    for (const secret of props.secrets.temporal) secret.grantRead(fn);
    // PutMetricData has no resource-level permissions: the namespace condition is what limits it.
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ['cloudwatch:PutMetricData'],
        resources: ['*'],
        conditions: { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } },
      }),
    );
    new Rule(this.stack, 'BacklogSchedule', {
      description: 'Publish the Temporal task queues backlog every minute (OpenStarry scaling)',
      schedule: Schedule.rate(Duration.minutes(1)),
      targets: [new LambdaFunction(fn, { retryAttempts: 0 })],
    });
    NagSuppressions.addResourceSuppressions(
      fn,
      [
        LAMBDA_LOGS_FINDING,
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'cloudwatch:PutMetricData has no resource-level permissions; the cloudwatch:namespace condition limits it to the stack metrics namespace.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
  }
}
