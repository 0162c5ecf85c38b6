/**
 * Everything but Temporal on AWS (docs/DEPLOY.md): workflow workers on ECS Fargate and tool workers
 * (no LLM key, EFS workspaces) on Fargate or, with `toolCompute: 'ec2'`, on EC2 where shell.run runs,
 * both scaled on their task queue's backlog (a scheduled Lambda publishes it); the HTTP API on Lambda
 * behind an API Gateway HTTP API, secrets in Secrets Manager, alerts on SNS, transcripts in S3, logs
 * with retention and an alarm on worker errors. Temporal itself is Temporal Cloud or your own cluster,
 * given by address. Least privilege: the worker's task role may publish to the alert topic and read and
 * write the transcript bucket, nothing else; its execution role reads its secrets; the API's roles (its
 * API Gateway function's and its streaming function's) read its secrets. Observability (infra/observability.ts,
 * on unless `observability: false`): an OTel collector beside each worker, X-Ray traces of the workers and
 * the API, CloudWatch metrics, a dashboard, alarms on lockouts and error cascades.
 *
 * Each concern is a part of its own (infra/stack-part.ts), in the order they depend on each other:
 * secrets.ts, alerts.ts, transcripts.ts, network.ts, workspaces.ts, worker-logs.ts, observability.ts,
 * worker-roles.ts, workers.ts (tool-instances.ts, version-workers.ts, scaling.ts), http-api.ts and
 * backlog-metric.ts. The stack wires them.
 *
 * ```ts
 * new StarryStack(app, 'OpenStarry', { temporalAddress, temporalNamespace, temporalAuth: 'api-key', projectRoot });
 * ```
 */
import { Stack, type StackProps } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Bucket } from 'aws-cdk-lib/aws-s3';
import type { Topic } from 'aws-cdk-lib/aws-sns';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { Alerts } from './alerts';
import { BacklogMetric } from './backlog-metric';
import { StarryApi } from './http-api';
import { Network } from './network';
import { Observability } from './observability';
import { StarrySecrets } from './secrets';
import { TASK_QUEUE, TOOL_TASK_QUEUE } from './task-queues';
import { Transcripts } from './transcripts';
import { WorkerLogs } from './worker-logs';
import { WorkerRoles } from './worker-roles';
import { type WorkerVersion, Workers } from './workers';
import { Workspaces } from './workspaces';

// The stack's constants, each defined beside the part that uses it, are importable from here too.
export { BACKLOG_STEPS } from './scaling';
export { TASK_QUEUE, TOOL_TASK_QUEUE } from './task-queues';
export { WORKFLOW_CACHE } from './version-workers';
export { DOCKER_CONTEXT_EXCLUDES, type WorkerVersion } from './workers';
export { JOURNAL_DIR, TOOL_WORKER_POLICY, WORKSPACE_ROOT, WORKSPACE_UID } from './workspaces';

export interface StarryStackProps extends StackProps {
  /** Temporal's gRPC address, e.g. `my-ns.a1b2c.tmprl.cloud:7233` or `temporal.internal:7233`. */
  temporalAddress: string;
  temporalNamespace: string;
  /** How the workers and the API authenticate to Temporal: an API key, an mTLS pair, or nothing (a private cluster). */
  temporalAuth: 'api-key' | 'mtls' | 'none';
  /** An e-mail address subscribed to the alert topic (it must confirm the subscription). */
  alertEmail?: string;
  /**
   * The worker image: a registry URI (`repo:tag`), or undefined to build it from this repository's Dockerfile at
   * deploy.
   */
  workerImage?: string;
  /**
   * The build id of the workers `workerImage` runs (the `version …` of their start line); default: this
   * repository's lib/workflow-bundle.js, which an image built from it holds.
   */
  workerBuildId?: string;
  /**
   * Older worker versions that still run tasks pinned to them: each keeps its own service until it is
   * drained and removed from this list (docs/DEPLOY.md#rolling-workers).
   */
  drainingWorkers?: WorkerVersion[];
  /**
   * Workflow worker tasks: at least `minWorkers` (default 1), at most `maxWorkers` (default 4), scaled on
   * their task queue's backlog with CPU as a floor.
   */
  minWorkers?: number;
  maxWorkers?: number;
  /**
   * The token claim naming the API caller's tenant (STARRY_API_TENANT_CLAIM, docs/API.md#tenants); unset: one tenant.
   */
  apiTenantClaim?: string;
  /**
   * Traces and metrics (docs/DEPLOY.md#observability-on-aws): an ADOT collector beside each worker, X-Ray
   * active tracing on the API, a CloudWatch dashboard and alarms. Default true; false leaves all of it out.
   */
  observability?: boolean;
  /**
   * Bedrock model ids, inference profile ids or ARNs the workers may call (`bedrock:MODEL_ID` agents, in
   * the stack's region): the task role gets `bedrock:InvokeModel` on these and no other. Default: none.
   */
  bedrockModels?: string[];
  /**
   * Where the tool workers run (docs/DEPLOY.md#tool-workers): `fargate` (default) for fs, http and MCP
   * tools, where `shell.run` refuses (no namespaces for bubblewrap); `ec2` for an Auto Scaling group of
   * ECS instances where `shell.run` runs in its sandbox.
   */
  toolCompute?: 'fargate' | 'ec2';
  /** Tool worker tasks: at least `minToolWorkers` (default 1), at most `maxToolWorkers` (default 4). */
  minToolWorkers?: number;
  maxToolWorkers?: number;
  /** The instance type of the tool workers' EC2 capacity (`toolCompute: 'ec2'`); default t3.medium. */
  toolInstanceType?: string;
  /** The ADOT collector image (default: the pinned public one, infra/observability.ts). */
  collectorImage?: string;
  /** The repository root (the Docker build context and the API's entry). */
  projectRoot: string;
}

export class StarryStack extends Stack {
  readonly alertTopic: Topic;
  readonly transcripts: Bucket;
  readonly api: HttpApi;

  constructor(scope: Construct, id: string, props: StarryStackProps) {
    super(scope, id, props);
    const retention = RetentionDays.ONE_MONTH;
    const temporal = { temporalAddress: props.temporalAddress, temporalNamespace: props.temporalNamespace };
    const toolCompute = props.toolCompute ?? 'fargate';

    const secrets = new StarrySecrets(this, 'SecretsPart', { temporalAuth: props.temporalAuth });
    this.alertTopic = new Alerts(this, 'AlertsPart', props.alertEmail ? { email: props.alertEmail } : {}).topic;
    this.transcripts = new Transcripts(this, 'TranscriptsPart').bucket;
    const network = new Network(this, 'NetworkPart', { toolCompute, retention });
    const workspaces = new Workspaces(this, 'WorkspacesPart', { vpc: network.vpc });
    const logs = new WorkerLogs(this, 'WorkerLogsPart', { retention, alertTopic: this.alertTopic });
    const observability =
      props.observability === false
        ? undefined
        : new Observability(this, 'Observability', {
            alertTopic: this.alertTopic,
            workerErrors: logs.errors,
            retention,
            ...(props.collectorImage ? { collectorImage: props.collectorImage } : {}),
          });
    const roles = new WorkerRoles(this, 'WorkerRolesPart', {
      alertTopic: this.alertTopic,
      transcripts: this.transcripts,
      workspaces,
      bedrockModels: props.bedrockModels ?? [],
      ...(observability ? { telemetry: observability } : {}),
    });
    new Workers(this, 'WorkersPart', {
      ...props,
      toolCompute,
      vpc: network.vpc,
      toolSubnetType: network.toolSubnetType,
      fleet: {
        ...temporal,
        cluster: network.cluster,
        roles,
        secrets,
        logGroup: logs.logGroup,
        alertTopic: this.alertTopic,
        transcripts: this.transcripts,
        workspaces,
        ...(observability ? { observability } : {}),
      },
    });
    this.api = new StarryApi(this, 'ApiPart', {
      ...temporal,
      secrets,
      ...(props.apiTenantClaim ? { apiTenantClaim: props.apiTenantClaim } : {}),
      tracing: observability !== undefined,
      projectRoot: props.projectRoot,
      retention,
    }).httpApi;
    new BacklogMetric(this, 'BacklogPart', {
      ...temporal,
      secrets,
      queues: [TASK_QUEUE, TOOL_TASK_QUEUE],
      projectRoot: props.projectRoot,
      retention,
    });
    NagSuppressions.addStackSuppressions(this, [
      {
        id: 'AwsSolutions-L1',
        reason: 'The log-retention and bucket-deployment helper functions CDK adds pin their own runtime.',
      },
    ]);
  }
}
