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
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CfnOutput, Duration, Fn, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { CfnStage, HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Alarm, ComparisonOperator, MathExpression, Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { AdjustmentType } from 'aws-cdk-lib/aws-applicationautoscaling';
import { AutoScalingGroup, BlockDeviceVolume, EbsDeviceVolumeType } from 'aws-cdk-lib/aws-autoscaling';
import {
  FlowLogDestination,
  InstanceType,
  LaunchTemplate,
  SecurityGroup,
  SubnetType,
  UserData,
  Vpc,
} from 'aws-cdk-lib/aws-ec2';
import {
  AccessPoint,
  FileSystem,
  LifecyclePolicy,
  OutOfInfrequentAccessPolicy,
  ThroughputMode,
} from 'aws-cdk-lib/aws-efs';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { ManagedPolicy, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import {
  AsgCapacityProvider,
  type BaseService,
  Cluster,
  ContainerImage,
  ContainerInsights,
  Ec2Service,
  Ec2TaskDefinition,
  EcsOptimizedImage,
  FargateService,
  FargateTaskDefinition,
  LinuxParameters,
  LogDrivers,
  NetworkMode,
  Secret as EcsSecret,
  type TaskDefinition,
} from 'aws-cdk-lib/aws-ecs';
import { FunctionUrlAuthType, HttpMethod, InvokeMode, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { FilterPattern, LogGroup, MetricFilter, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Subscription, SubscriptionProtocol, Topic } from 'aws-cdk-lib/aws-sns';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { bedrockInvokeArns } from '../core/llm-spec';
import type { WorkerEnvName } from '../workers/env';
import { buildIdOf } from '../workers/versioning';
import { BACKLOG_METRIC, METRICS_NAMESPACE, TASK_QUEUE_DIMENSION } from './metric-names';
import { Observability } from './observability';

/** A version of the workers (a Worker Deployment Version, workers/versioning.ts): its build id and its image. */
export interface WorkerVersion {
  buildId: string;
  image: string;
}

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

    // --- Secrets: values are set after deploy (docs/DEPLOY.md); none is in the template or the image.
    const temporalApiKey =
      props.temporalAuth === 'api-key'
        ? new Secret(this, 'TemporalApiKey', { description: 'Temporal Cloud API key (set its value after deploy)' })
        : undefined;
    const temporalTlsCert =
      props.temporalAuth === 'mtls'
        ? new Secret(this, 'TemporalTlsCert', { description: 'Temporal mTLS client certificate, PEM' })
        : undefined;
    const temporalTlsKey =
      props.temporalAuth === 'mtls'
        ? new Secret(this, 'TemporalTlsKey', { description: 'Temporal mTLS client key, PEM' })
        : undefined;
    const openaiApiKey = new Secret(this, 'OpenAiApiKey', {
      description: 'OPENAI_API_KEY for openai: agents (set its value after deploy)',
    });
    const geminiApiKey = new Secret(this, 'GeminiApiKey', {
      description: 'GEMINI_API_KEY for gemini: agents, when not using Vertex AI with the task role',
    });
    const jwtSecret = new Secret(this, 'ApiJwtSecret', {
      description: 'HS256 secret the HTTP API checks bearer tokens with',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
    });
    // The Lambdas get the Temporal credentials as ARNs (client/secret-env.ts reads them).
    const temporalSecretList = [temporalApiKey, temporalTlsCert, temporalTlsKey].filter((x) => x !== undefined);
    const temporalSecretArns = {
      ...(temporalApiKey ? { TEMPORAL_API_KEY_SECRET_ARN: temporalApiKey.secretArn } : {}),
      ...(temporalTlsCert && temporalTlsKey
        ? {
            TEMPORAL_TLS_CERT_SECRET_ARN: temporalTlsCert.secretArn,
            TEMPORAL_TLS_KEY_SECRET_ARN: temporalTlsKey.secretArn,
          }
        : {}),
    };
    for (const s of [temporalApiKey, temporalTlsCert, temporalTlsKey, openaiApiKey, geminiApiKey, jwtSecret]) {
      if (s)
        NagSuppressions.addResourceSuppressions(s, [
          {
            id: 'AwsSolutions-SMG4',
            reason:
              'Third-party credentials (Temporal, LLM providers) are rotated at their issuer; the JWT secret is rotated by redeploying.',
          },
        ]);
    }

    // --- Alerts: the worker's alert activity publishes here; an optional e-mail subscription.
    this.alertTopic = new Topic(this, 'Alerts', { displayName: 'OpenStarry alerts', enforceSSL: true });
    if (props.alertEmail)
      new Subscription(this, 'AlertEmail', {
        topic: this.alertTopic,
        protocol: SubscriptionProtocol.EMAIL,
        endpoint: props.alertEmail,
      });
    NagSuppressions.addResourceSuppressions(this.alertTopic, [
      {
        id: 'AwsSolutions-SNS2',
        reason:
          'Alerts carry agent ids and reasons, no secrets; SSE with the AWS-managed key would block e-mail delivery setup without a CMK.',
      },
    ]);

    // --- Transcripts (activities/store/): blobs named by their SHA-256, which task histories refer to.
    // Kept when the stack is deleted, and never expired here: deleting a blob a live (or suspended,
    // waiting for a human) task refers to breaks that task. Not versioned: a key's content never changes.
    this.transcripts = new Bucket(this, 'Transcripts', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      versioned: false,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    NagSuppressions.addResourceSuppressions(this.transcripts, [
      {
        id: 'AwsSolutions-S1',
        reason:
          "Only the workers' task role reads and writes it, by content hash; CloudTrail data events audit it when needed, without a second bucket of access logs.",
      },
    ]);

    // --- Network: public subnets (workers reach Temporal Cloud and LLM APIs; nothing reaches them). With
    // tool workers on EC2, private subnets behind one NAT gateway too: a task with its own network
    // interface on an EC2 instance (awsvpc) gets no public IP, so it reaches out through NAT.
    const toolCompute = props.toolCompute ?? 'fargate';
    const flowLogs = new LogGroup(this, 'VpcFlowLogs', { retention, removalPolicy: RemovalPolicy.DESTROY });
    const vpc = new Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: toolCompute === 'ec2' ? 1 : 0,
      subnetConfiguration: [
        { name: 'public', subnetType: SubnetType.PUBLIC },
        ...(toolCompute === 'ec2' ? [{ name: 'tools', subnetType: SubnetType.PRIVATE_WITH_EGRESS }] : []),
      ],
      flowLogs: { all: { destination: FlowLogDestination.toCloudWatchLogs(flowLogs) } },
    });
    const cluster = new Cluster(this, 'Cluster', { vpc, containerInsightsV2: ContainerInsights.ENABLED });

    // --- Workspaces (docs/DEPLOY.md#workspaces-on-efs): one encrypted EFS file system every tool worker
    // mounts at WORKSPACE_ROOT, through an access point that makes every file the image's `node` user's.
    // User data: kept when the stack is deleted, backed up daily. Only the tool workers may reach it.
    const workspaces = new FileSystem(this, 'Workspaces', {
      vpc,
      vpcSubnets: { subnetType: SubnetType.PUBLIC },
      encrypted: true,
      enableAutomaticBackups: true,
      throughputMode: ThroughputMode.ELASTIC,
      // Files untouched for 30 days move to Infrequent Access, and back on their first read.
      lifecyclePolicy: LifecyclePolicy.AFTER_30_DAYS,
      outOfInfrequentAccessPolicy: OutOfInfrequentAccessPolicy.AFTER_1_ACCESS,
      removalPolicy: RemovalPolicy.RETAIN,
      securityGroup: new SecurityGroup(this, 'WorkspacesSecurityGroup', {
        vpc,
        description: 'EFS workspaces: NFS from the tool workers only',
        allowAllOutbound: false,
      }),
    });
    // Every file through them is the image's `node` user's.
    const accessPoint = (id: string, root: string, permissions: string) =>
      workspaces.addAccessPoint(id, {
        path: root,
        posixUser: { uid: String(WORKSPACE_UID), gid: String(WORKSPACE_UID) },
        createAcl: { ownerUid: String(WORKSPACE_UID), ownerGid: String(WORKSPACE_UID), permissions },
      });
    const workspaceAccess = accessPoint('WorkspaceAccess', WORKSPACE_ROOT, '750');
    // The tool call journal (the policy's journalDir) on the same file system, outside the workspaces: an
    // `fs.write` append retried on another tool worker is still applied once, and no agent can reach it.
    const journalAccess = accessPoint('JournalAccess', JOURNAL_PATH, '700');

    // --- Workers on Fargate: one service per worker version (docs/DEPLOY.md#rolling-workers). A version's
    // service is named by its build id and never replaced by another version's: the new version starts
    // beside the old ones and makes itself current once it polls; an old one keeps running the tasks
    // pinned to it until it is drained and dropped from `drainingWorkers`, then CloudFormation removes it.
    // (One service rolled from one image to the next would stop the old workers while tasks are
    // still pinned to them: nothing else could ever run those.)
    const workerLogs = new LogGroup(this, 'WorkerLogs', { retention, removalPolicy: RemovalPolicy.DESTROY });
    // Worker errors (the SDK's and ours are "[worker ERROR]" / "worker failed" lines) page the topic.
    const errors = new MetricFilter(this, 'WorkerErrors', {
      logGroup: workerLogs,
      filterPattern: FilterPattern.anyTerm('ERROR', 'worker failed'),
      metricNamespace: METRICS_NAMESPACE,
      metricName: 'WorkerErrors',
      metricValue: '1',
      defaultValue: 0,
    });
    const errorMetric = errors.metric({ period: Duration.minutes(5), statistic: 'Sum' });
    // The worker's own AWS identity, shared by every version: publishing alerts, reading and writing
    // transcript blobs, nothing else. No delete: the store never deletes (content-addressed, shared).
    const taskRole = new Role(this, 'WorkerTaskRole', { assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com') });
    this.alertTopic.grantPublish(taskRole);
    this.transcripts.grantRead(taskRole);
    this.transcripts.grantPut(taskRole);
    // Converse is bedrock:InvokeModel, on the models the deployment names only.
    const bedrockArns = (props.bedrockModels ?? []).flatMap((model) =>
      bedrockInvokeArns(model, { partition: this.partition, region: this.region, account: this.account }),
    );
    if (bedrockArns.length) {
      taskRole.addToPolicy(new PolicyStatement({ actions: ['bedrock:InvokeModel'], resources: bedrockArns }));
      NagSuppressions.addResourceSuppressions(
        taskRole,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              'A cross-region inference profile routes each call to its model in one of several regions, which it picks: the named model is allowed in any region, and no other model.',
            appliesTo: [{ regex: '/^Resource::arn:<AWS::Partition>:bedrock:\\*::foundation-model\\/[^*]+$/' }],
          },
        ],
        true,
      );
    }
    const o11y =
      props.observability === false
        ? undefined
        : new Observability(this, 'Observability', {
            taskRole,
            alertTopic: this.alertTopic,
            workerErrors: errorMetric,
            retention,
            ...(props.collectorImage ? { collectorImage: props.collectorImage } : {}),
          });
    // Typed by the worker's own list of variables (workers/env.ts): the stack cannot set one it ignores.
    const temporalSecrets: Partial<Record<WorkerEnvName, EcsSecret>> = {
      ...(temporalApiKey ? { TEMPORAL_API_KEY: EcsSecret.fromSecretsManager(temporalApiKey) } : {}),
      ...(temporalTlsCert && temporalTlsKey
        ? {
            TEMPORAL_TLS_CERT: EcsSecret.fromSecretsManager(temporalTlsCert),
            TEMPORAL_TLS_KEY: EcsSecret.fromSecretsManager(temporalTlsKey),
          }
        : {}),
    };
    // The LLM keys go to the workflow workers only: a tool worker refuses to start with one.
    const secrets: Partial<Record<WorkerEnvName, EcsSecret>> = {
      OPENAI_API_KEY: EcsSecret.fromSecretsManager(openaiApiKey),
      GEMINI_API_KEY: EcsSecret.fromSecretsManager(geminiApiKey),
      ...temporalSecrets,
    };

    // --- Tool workers (`starry worker --tools`): every tool call runs on TOOL_TASK_QUEUE, in tasks that
    // hold no LLM key, with a role of their own that reaches the transcript bucket and the workspaces only.
    const toolRole = new Role(this, 'ToolWorkerTaskRole', {
      assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com'),
    });
    // A tool result is kept in the transcript store (the message the LLM will see refers to it).
    this.transcripts.grantRead(toolRole);
    this.transcripts.grantPut(toolRole);
    o11y?.grantTelemetry(toolRole);
    // Mount and write through the workspaces' access point only (no root access, no other path).
    toolRole.addToPolicy(
      new PolicyStatement({
        actions: ['elasticfilesystem:ClientMount', 'elasticfilesystem:ClientWrite'],
        resources: [workspaces.fileSystemArn],
        conditions: {
          StringEquals: {
            'elasticfilesystem:AccessPointArn': [workspaceAccess.accessPointArn, journalAccess.accessPointArn],
          },
        },
      }),
    );
    const toolCapacity = toolCompute === 'ec2' ? this.toolInstances(cluster, vpc, props) : undefined;

    const current: WorkerVersion & { asset: boolean } = {
      buildId: props.workerBuildId ?? bundleBuildId(props.projectRoot),
      image: props.workerImage ?? '',
      asset: !props.workerImage,
    };
    const versions = [...(props.drainingWorkers ?? []).map((v) => ({ ...v, asset: false })), current];
    const seen = new Set<string>();
    for (const v of versions) {
      if (seen.has(v.buildId))
        throw new Error(
          `worker version ${v.buildId} is listed twice: the current version (workerBuildId) is never one of the drainingWorkers`,
        );
      seen.add(v.buildId);
    }
    const assetImage = ContainerImage.fromAsset(props.projectRoot, {
      platform: Platform.LINUX_AMD64,
      exclude: DOCKER_CONTEXT_EXCLUDES,
    });
    // Each mounted with TLS and IAM authorization, through its access point.
    const efsVolume = (name: string, accessPoint: AccessPoint) => ({
      name,
      efsVolumeConfiguration: {
        fileSystemId: workspaces.fileSystemId,
        transitEncryption: 'ENABLED',
        authorizationConfig: { accessPointId: accessPoint.accessPointId, iam: 'ENABLED' },
      },
    });
    const workspaceVolume = efsVolume('workspaces', workspaceAccess);
    const journalVolume = efsVolume('journal', journalAccess);
    for (const [key, value] of [
      ['minWorkers', props.minWorkers],
      ['minToolWorkers', props.minToolWorkers],
    ] as const)
      if (value !== undefined && value < 1)
        throw new Error(
          `${key} must be at least 1, got ${value}: a task waits seconds for a worker of each kind, less than a service takes to scale up from none`,
        );
    // Each kind's services scale between these; the current version's also on its queue's backlog.
    const range = {
      workflow: { min: props.minWorkers ?? 1, max: props.maxWorkers ?? 4, queue: TASK_QUEUE },
      tools: { min: props.minToolWorkers ?? 1, max: props.maxToolWorkers ?? 4, queue: TOOL_TASK_QUEUE },
    };
    const services = versions.flatMap((v) => {
      const isCurrent = v === current;
      const image = v.asset ? assetImage : ContainerImage.fromRegistry(v.image);
      const environment = {
        TEMPORAL_ADDRESS: props.temporalAddress,
        TEMPORAL_NAMESPACE: props.temporalNamespace,
        STARRY_TOOL_TASK_QUEUE: TOOL_TASK_QUEUE,
        STARRY_STORE_BUCKET: this.transcripts.bucketName,
        ...o11y?.workerEnvironment(v.buildId),
      } satisfies Partial<Record<WorkerEnvName, string>>;

      // The workflow workers: the agent and task workflows, the LLM calls, alerts; no tool code.
      const id = `Workers-${v.buildId}`;
      const task = new FargateTaskDefinition(this, `${id}-Task`, { cpu: 1024, memoryLimitMiB: 2048, taskRole });
      const worker = task.addContainer('worker', {
        image,
        command: ['node', 'bin/starry.js', 'worker'],
        environment: {
          ...environment,
          STARRY_ALERT_TOPIC_ARN: this.alertTopic.topicArn,
          // The sticky cache sized to the task's 2 GB: ~0.7 MB of RSS a cached agent over a ~0.3 GB base
          // (docs/BENCHMARKS.md). The SDK's default follows the heap limit, which need not follow the task's memory.
          STARRY_MAX_CACHED_WORKFLOWS: String(WORKFLOW_CACHE),
          // The new version becomes current once its workers poll, and wakes the agents of the old ones;
          // a draining version never touches the routing (a late task of it cannot roll it back).
          ...(isCurrent ? { STARRY_MAKE_CURRENT: 'always' } : {}),
        } satisfies Partial<Record<WorkerEnvName, string>>,
        secrets: secrets as Record<string, EcsSecret>,
        logging: LogDrivers.awsLogs({ streamPrefix: `worker-${v.buildId}`, logGroup: workerLogs }),
        // SIGTERM, then 60 s: the worker lets activities in flight finish for 45 s (shutdownGraceTime).
        stopTimeout: Duration.seconds(60),
      });
      o11y?.addCollector(task, worker);
      const service = new FargateService(this, id, {
        cluster,
        taskDefinition: task,
        desiredCount: range.workflow.min,
        assignPublicIp: true,
        // A change to one version's service (its secrets, its size) starts new workers of the same
        // version before the old ones stop: pinned tasks move to them, nothing is stranded.
        minHealthyPercent: 100,
        maxHealthyPercent: 200,
        circuitBreaker: { rollback: true },
      });
      this.scale(service, cluster, range.workflow, isCurrent);
      suppressTaskFindings(task, service);

      // The tool workers of the same image: the workspaces mounted at their root, Temporal's credentials
      // and no other secret. On EC2 bubblewrap can confine each program (docs/DEPLOY.md#shellrun-on-ec2);
      // on Fargate shell.run refuses (no namespaces).
      const toolId = `ToolWorkers-${v.buildId}`;
      const toolTask = toolCapacity
        ? new Ec2TaskDefinition(this, `${toolId}-Task`, {
            networkMode: NetworkMode.AWS_VPC,
            taskRole: toolRole,
            volumes: [workspaceVolume, journalVolume],
          })
        : new FargateTaskDefinition(this, `${toolId}-Task`, {
            cpu: 1024,
            memoryLimitMiB: 2048,
            taskRole: toolRole,
            volumes: [workspaceVolume, journalVolume],
          });
      const toolWorker = toolTask.addContainer('worker', {
        image,
        command: ['node', 'bin/starry.js', 'worker', '--tools'],
        environment: { ...environment, STARRY_WORKER_POLICY: TOOL_WORKER_POLICY } satisfies Partial<
          Record<WorkerEnvName, string>
        >,
        secrets: temporalSecrets as Record<string, EcsSecret>,
        logging: LogDrivers.awsLogs({ streamPrefix: `tools-${v.buildId}`, logGroup: workerLogs }),
        stopTimeout: Duration.seconds(60),
        ...(toolCapacity
          ? {
              // The task's 1 vCPU and 2 GiB, less the collector's share.
              cpu: 768,
              memoryLimitMiB: 1792,
              ...sandboxSettings(this, `${toolId}-Linux`),
            }
          : {}),
      });
      toolWorker.addMountPoints(
        { sourceVolume: workspaceVolume.name, containerPath: WORKSPACE_ROOT, readOnly: false },
        { sourceVolume: journalVolume.name, containerPath: JOURNAL_DIR, readOnly: false },
      );
      o11y?.addCollector(toolTask, toolWorker);
      const common = {
        cluster,
        desiredCount: range.tools.min,
        minHealthyPercent: 100,
        maxHealthyPercent: 200,
        circuitBreaker: { rollback: true },
      };
      const toolService = toolCapacity
        ? new Ec2Service(this, toolId, {
            ...common,
            taskDefinition: toolTask,
            capacityProviderStrategies: [{ capacityProvider: toolCapacity.capacityProviderName, weight: 1 }],
            vpcSubnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
          })
        : new FargateService(this, toolId, { ...common, taskDefinition: toolTask, assignPublicIp: true });
      workspaces.connections.allowDefaultPortFrom(toolService, 'NFS from the tool workers');
      this.scale(toolService, cluster, range.tools, isCurrent);
      suppressTaskFindings(toolTask, toolService);
      return [service, toolService];
    });
    for (const role of [taskRole, toolRole])
      NagSuppressions.addResourceSuppressions(
        role,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              "Transcript blobs are objects named by their hash, unknown in advance: the role reads and writes any object of its own bucket (CDK's grantRead and grantPut actions), and deletes none.",
            appliesTo: [
              'Action::s3:GetObject*',
              'Action::s3:GetBucket*',
              'Action::s3:List*',
              'Action::s3:Abort*',
              { regex: '/^Resource::<Transcripts[0-9A-F]+\\.Arn>\\/\\*$/' },
            ],
          },
        ],
        true,
      );
    // The draining versions' services exist before the new one starts: its workers wake the old
    // agents, which continue as new on their own version's workers first.
    const newest = services.slice(-2);
    const toolService = newest[1]!;
    new CfnOutput(this, 'ClusterName', { value: cluster.clusterName });
    new CfnOutput(this, 'WorkspaceFileSystemId', {
      value: workspaces.fileSystemId,
      description: 'The EFS file system of the workspaces (kept when the stack is deleted)',
    });
    new CfnOutput(this, 'ToolWorkerTaskDefinition', {
      value: toolService.taskDefinition.taskDefinitionArn,
      description: 'The current tool workers: run a one-off task of it to put files into /workspaces (docs/DEPLOY.md)',
    });
    const toolSubnets = vpc.selectSubnets({
      subnetType: toolCapacity ? SubnetType.PRIVATE_WITH_EGRESS : SubnetType.PUBLIC,
    }).subnetIds;
    const toolGroups = toolService.connections.securityGroups.map((g) => g.securityGroupId);
    new CfnOutput(this, 'ToolWorkerNetwork', {
      value: `awsvpcConfiguration={subnets=[${Fn.join(',', toolSubnets)}],securityGroups=[${Fn.join(',', toolGroups)}],assignPublicIp=${toolCapacity ? 'DISABLED' : 'ENABLED'}}`,
      description: "aws ecs run-task --network-configuration of a one-off task like the tool workers'",
    });
    if (toolCapacity) new CfnOutput(this, 'ToolCapacityProvider', { value: toolCapacity.capacityProviderName });
    for (const service of services.slice(0, -2)) for (const n of newest) n.node.addDependency(service);

    new Alarm(this, 'WorkerErrorAlarm', {
      metric: errorMetric,
      threshold: 5,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: 'OpenStarry workers logged 5 or more errors in 5 minutes',
    }).addAlarmAction(new SnsAction(this.alertTopic));

    // --- The HTTP API on Lambda (api/lambda.ts, bundled with the local esbuild: no Docker), and its
    // streaming entry (api/lambda-stream.ts): the same app, secrets and role grants, each its own function.
    const apiFunction = (id: string, entry: string, timeout: Duration, logGroup: LogGroup) => {
      const f = new NodejsFunction(this, id, {
        entry: path.join(props.projectRoot, 'api', entry),
        handler: 'handler',
        runtime: Runtime.NODEJS_22_X,
        memorySize: 512,
        timeout,
        logGroup,
        // X-Ray segments of each invocation (sampled: 1 a second and 5% beyond).
        ...(o11y ? { tracing: Tracing.ACTIVE } : {}),
        environment: {
          TEMPORAL_ADDRESS: props.temporalAddress,
          TEMPORAL_NAMESPACE: props.temporalNamespace,
          STARRY_API_JWT_SECRET_ARN: jwtSecret.secretArn,
          ...temporalSecretArns,
          ...(props.apiTenantClaim ? { STARRY_API_TENANT_CLAIM: props.apiTenantClaim } : {}),
        },
        bundling: LAMBDA_BUNDLING,
      });
      jwtSecret.grantRead(f);
      for (const secret of temporalSecretList) secret.grantRead(f);
      NagSuppressions.addResourceSuppressions(
        f,
        [
          {
            id: 'AwsSolutions-IAM4',
            reason: 'AWSLambdaBasicExecutionRole only lets the function write its own logs.',
            appliesTo: ['Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole'],
          },
          ...(o11y
            ? [
                {
                  id: 'AwsSolutions-IAM5',
                  reason:
                    'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions.',
                  appliesTo: ['Resource::*'],
                },
              ]
            : []),
        ],
        true,
      );
      return f;
    };
    const apiLogs = new LogGroup(this, 'ApiLogs', { retention, removalPolicy: RemovalPolicy.DESTROY });
    const fn = apiFunction('ApiFunction', 'lambda.ts', Duration.seconds(29), apiLogs);
    this.api = new HttpApi(this, 'HttpApi', {
      description: 'OpenStarry on Temporal',
      defaultIntegration: new HttpLambdaIntegration('Api', fn),
    });
    const accessLogs = new LogGroup(this, 'ApiAccessLogs', { retention, removalPolicy: RemovalPolicy.DESTROY });
    const stage = this.api.defaultStage?.node.defaultChild as CfnStage;
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
      this.api,
      [
        {
          id: 'AwsSolutions-APIG4',
          reason:
            'The app authorizes every route but /healthz and /openapi.json itself (bearer JWT with roles, api/auth.ts).',
        },
      ],
      true,
    );

    // --- The live event routes (text/event-stream) through a function URL with response streaming: an
    // API Gateway HTTP API hands a response on only once it has ended. No AWS auth on the URL: the app
    // checks the bearer JWT of every route but /healthz and /openapi.json itself, as behind API Gateway.
    // A stream ends at the function's timeout (15 minutes, Lambda's cap); its client resumes with
    // Last-Event-ID. Each open stream holds one concurrent execution for as long as it is open.
    const streamLogs = new LogGroup(this, 'ApiStreamLogs', { retention, removalPolicy: RemovalPolicy.DESTROY });
    const streamFn = apiFunction('ApiStreamFunction', 'lambda-stream.ts', Duration.minutes(15), streamLogs);
    const streamUrl = streamFn.addFunctionUrl({
      authType: FunctionUrlAuthType.NONE,
      invokeMode: InvokeMode.RESPONSE_STREAM,
      cors: {
        // A bearer token, never a cookie, authorizes a call: any origin may make one.
        allowedOrigins: ['*'],
        allowedMethods: [HttpMethod.GET],
        allowedHeaders: ['authorization', 'last-event-id'],
        maxAge: Duration.hours(1),
      },
    });
    // --- Backlog (docs/DEPLOY.md#scaling): every minute a function asks Temporal for the backlog of both
    // task queues (DescribeTaskQueue) and publishes it as TaskQueueBacklog, which the services scale on.
    const backlogFn = new NodejsFunction(this, 'BacklogFunction', {
      entry: path.join(props.projectRoot, 'infra', 'backlog', 'handler.ts'),
      handler: 'handler',
      runtime: Runtime.NODEJS_22_X,
      memorySize: 256,
      timeout: Duration.seconds(30),
      logGroup: new LogGroup(this, 'BacklogLogs', { retention, removalPolicy: RemovalPolicy.DESTROY }),
      environment: {
        TEMPORAL_ADDRESS: props.temporalAddress,
        TEMPORAL_NAMESPACE: props.temporalNamespace,
        ...temporalSecretArns,
        STARRY_BACKLOG_QUEUES: [TASK_QUEUE, TOOL_TASK_QUEUE].join(','),
        STARRY_METRICS_NAMESPACE: METRICS_NAMESPACE,
      },
      bundling: LAMBDA_BUNDLING,
    });
    for (const secret of temporalSecretList) secret.grantRead(backlogFn);
    // PutMetricData has no resource-level permissions: the namespace condition is what limits it.
    backlogFn.addToRolePolicy(
      new PolicyStatement({
        actions: ['cloudwatch:PutMetricData'],
        resources: ['*'],
        conditions: { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } },
      }),
    );
    new Rule(this, 'BacklogSchedule', {
      description: 'Publish the Temporal task queues backlog every minute (OpenStarry scaling)',
      schedule: Schedule.rate(Duration.minutes(1)),
      targets: [new LambdaFunction(backlogFn, { retryAttempts: 0 })],
    });
    NagSuppressions.addResourceSuppressions(
      backlogFn,
      [
        {
          id: 'AwsSolutions-IAM4',
          reason: 'AWSLambdaBasicExecutionRole only lets the function write its own logs.',
          appliesTo: ['Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole'],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'cloudwatch:PutMetricData has no resource-level permissions; the cloudwatch:namespace condition limits it to the stack metrics namespace.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );

    NagSuppressions.addStackSuppressions(this, [
      {
        id: 'AwsSolutions-L1',
        reason: 'The log-retention and bucket-deployment helper functions CDK adds pin their own runtime.',
      },
    ]);

    new CfnOutput(this, 'WorkerBuildId', {
      value: current.buildId,
      description:
        'The current worker version: list it in drainingWorkers, with its image, when you deploy the next one',
    });
    new CfnOutput(this, 'ApiUrl', { value: this.api.apiEndpoint });
    new CfnOutput(this, 'StreamUrl', {
      value: streamUrl.url,
      description: 'The live event routes (GET .../events, text/event-stream) of the same API, streamed',
    });
    new CfnOutput(this, 'AlertTopicArn', { value: this.alertTopic.topicArn });
    new CfnOutput(this, 'TranscriptBucketName', { value: this.transcripts.bucketName });
    new CfnOutput(this, 'ApiJwtSecretArn', { value: jwtSecret.secretArn });
  }

  /**
   * A service's task count: between `min` and `max`, on CPU (60%) always, and for the current version on
   * its queue's backlog per running task (BACKLOG_STEPS). A draining version's services scale on CPU
   * only: the queue's backlog is the new version's work.
   */
  private scale(
    service: BaseService,
    cluster: Cluster,
    range: { min: number; max: number; queue: string },
    onBacklog: boolean,
  ): void {
    const scaling = service.autoScaleTaskCount({ minCapacity: range.min, maxCapacity: range.max });
    scaling.scaleOnCpuUtilization('Cpu', {
      targetUtilizationPercent: 60,
      scaleInCooldown: Duration.minutes(5),
      scaleOutCooldown: Duration.minutes(1),
    });
    if (!onBacklog) return;
    const minute = Duration.minutes(1);
    scaling.scaleOnMetric('Backlog', {
      metric: new MathExpression({
        label: `${range.queue} backlog per task`,
        // No data yet counts as none; no running task as one (the backlog itself).
        expression: 'FILL(backlog, 0) / IF(FILL(tasks, 0) > 0, FILL(tasks, 0), 1)',
        usingMetrics: {
          backlog: new Metric({
            namespace: METRICS_NAMESPACE,
            metricName: BACKLOG_METRIC,
            dimensionsMap: { [TASK_QUEUE_DIMENSION]: range.queue },
            statistic: 'Maximum',
            period: minute,
          }),
          tasks: new Metric({
            namespace: 'ECS/ContainerInsights',
            metricName: 'RunningTaskCount',
            dimensionsMap: { ClusterName: cluster.clusterName, ServiceName: service.serviceName },
            statistic: 'Average',
            period: minute,
          }),
        },
        period: minute,
      }),
      scalingSteps: BACKLOG_STEPS,
      adjustmentType: AdjustmentType.CHANGE_IN_CAPACITY,
      cooldown: minute,
      evaluationPeriods: 2,
    });
  }

  /**
   * The tool workers' EC2 capacity: an Auto Scaling group of ECS-optimized Amazon Linux 2023 instances in
   * the private subnets, scaled by ECS (a capacity provider). IMDSv2 only, one hop: a container cannot
   * reach the instance role; encrypted root volumes; the instance role has the ECS agent's policy only.
   */
  private toolInstances(cluster: Cluster, vpc: Vpc, props: StarryStackProps): AsgCapacityProvider {
    const instanceRole = new Role(this, 'ToolInstanceRole', {
      assumedBy: new ServicePrincipal('ec2.amazonaws.com'),
      managedPolicies: [ManagedPolicy.fromAwsManagedPolicyName('service-role/AmazonEC2ContainerServiceforEC2Role')],
    });
    // Unprivileged user namespaces for bubblewrap, however the AMI's default is set; and no instance
    // metadata for a task with its own network interface (awsvpc), which the hop limit does not stop.
    const userData = UserData.forLinux();
    userData.addCommands(
      "echo 'user.max_user_namespaces = 15000' > /etc/sysctl.d/90-openstarry-userns.conf",
      'sysctl --system',
      'echo ECS_AWSVPC_BLOCK_IMDS=true >> /etc/ecs/ecs.config',
    );
    const template = new LaunchTemplate(this, 'ToolInstanceTemplate', {
      machineImage: EcsOptimizedImage.amazonLinux2023(),
      instanceType: new InstanceType(props.toolInstanceType ?? 't3.medium'),
      userData,
      role: instanceRole,
      requireImdsv2: true,
      httpPutResponseHopLimit: 1,
      securityGroup: new SecurityGroup(this, 'ToolInstanceSecurityGroup', {
        vpc,
        description: 'Tool worker instances: outbound only',
      }),
      blockDevices: [
        {
          deviceName: '/dev/xvda',
          volume: BlockDeviceVolume.ebs(30, { encrypted: true, volumeType: EbsDeviceVolumeType.GP3 }),
        },
      ],
    });
    const group = new AutoScalingGroup(this, 'ToolInstances', {
      vpc,
      vpcSubnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
      launchTemplate: template,
      minCapacity: 0,
      maxCapacity: props.maxToolWorkers ?? 4,
    });
    const provider = new AsgCapacityProvider(this, 'ToolCapacity', { autoScalingGroup: group });
    cluster.addAsgCapacityProvider(provider);
    NagSuppressions.addResourceSuppressions(
      instanceRole,
      [
        {
          id: 'AwsSolutions-IAM4',
          reason:
            "AmazonEC2ContainerServiceforEC2Role is the ECS agent's own policy (register the instance, pull images, send logs): the role has nothing else.",
          appliesTo: ['Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonEC2ContainerServiceforEC2Role'],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'The statements CDK adds for the ECS agent of a capacity provider (ecs:Submit*, ecs:Poll and the like on the cluster, with Resource * where ECS has no resource-level permissions).',
          appliesTo: ['Action::ecs:Submit*', 'Resource::*'],
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(group, [
      {
        id: 'AwsSolutions-AS3',
        reason:
          'ECS scales the group (managed scaling): its launches and terminations follow the tool service, whose failures the worker-error alarm already pages.',
      },
    ]);
    return provider;
  }
}

/** The task queue of the workflows and LLM calls: the worker's default (STARRY_TASK_QUEUE unset). */
export const TASK_QUEUE = 'openstarry';
/** The tool activities' task queue, which the tool workers poll (STARRY_TOOL_TASK_QUEUE on every worker). */
export const TOOL_TASK_QUEUE = `${TASK_QUEUE}-tools`;
/**
 * Agents a workflow worker (2 GB) keeps cached between their tasks (STARRY_MAX_CACHED_WORKFLOWS): ~0.7 GB
 * of RSS at ~0.7 MB each; an agent evicted from it replays its history at its next task.
 */
export const WORKFLOW_CACHE = 1000;
/** Where the tool workers mount the EFS workspaces: the worker policy's one root. */
export const WORKSPACE_ROOT = '/workspaces';
/** The journal's directory on the file system (outside the workspaces) and where the tool workers mount it. */
const JOURNAL_PATH = '/journal';
export const JOURNAL_DIR = '/var/lib/starry/journal';
/**
 * The tool workers' policy (STARRY_WORKER_POLICY): the workspaces as the one root, the journal beside
 * them; every other limit the policy's default (docs/ARCHITECTURE.md#trust-boundary).
 */
export const TOOL_WORKER_POLICY = JSON.stringify({ roots: [WORKSPACE_ROOT], journalDir: JOURNAL_DIR });
/** The owner of every workspace file (the access point's POSIX user): the image's `node` user (Dockerfile). */
export const WORKSPACE_UID = 1000;

/**
 * Scale on backlog: backlog per task of the service's queue at or above these adds tasks, below 1
 * removes one. CPU target tracking beside it is the floor: Application Auto Scaling keeps the larger
 * of the two policies' capacities.
 */
export const BACKLOG_STEPS = [
  { upper: 1, change: -1 },
  { lower: 5, change: +1 },
  { lower: 20, change: +3 },
];

/** Bundling of the stack's Lambda functions: the local esbuild (no Docker), CommonJS for Node 22. */
const LAMBDA_BUNDLING = {
  forceDockerBundling: false,
  format: OutputFormat.CJS,
  target: 'node22',
  // The runtime has AWS SDK v3; the native Temporal worker is never part of a function.
  externalModules: ['@aws-sdk/*', '@temporalio/worker', '@temporalio/core-bridge'],
  minify: true,
  sourceMap: true,
};

/**
 * What bubblewrap needs in an ECS container on EC2 (docs/DEPLOY.md#shellrun-on-ec2). Docker's default
 * seccomp profile refuses pivot_root to every container, and unshare and mount to one without
 * CAP_SYS_ADMIN; it also masks paths of /proc, under which the kernel refuses the fresh /proc a sandbox
 * mounts in its user namespace. Docker would lift just these two (`--security-opt seccomp=unconfined`,
 * `systempaths=unconfined`); ECS offers neither, only `privileged`, which lifts both. The worker still runs
 * as the image's `node` user, so it holds no capability itself, and the image has no set-uid program to
 * gain one (Dockerfile): bubblewrap makes its unprivileged user namespace, as on a laptop. An init
 * process reaps what a sandbox leaves.
 */
function sandboxSettings(scope: Construct, id: string): { privileged: true; linuxParameters: LinuxParameters } {
  return { privileged: true, linuxParameters: new LinuxParameters(scope, id, { initProcessEnabled: true }) };
}

/** cdk-nag findings every worker task and service has, acknowledged. */
function suppressTaskFindings(task: TaskDefinition, service: BaseService): void {
  NagSuppressions.addResourceSuppressions(
    task,
    [
      {
        id: 'AwsSolutions-ECS2',
        reason:
          "The environment holds only non-secret addresses and the collector's configuration; every secret is an ECS secret from Secrets Manager.",
      },
      {
        id: 'AwsSolutions-IAM5',
        reason:
          'ecr:GetAuthorizationToken has no resource-level permissions: pulling an image built from the repository needs Resource *.',
        appliesTo: ['Resource::*'],
      },
    ],
    true,
  );
  NagSuppressions.addResourceSuppressions(
    service,
    [
      {
        id: 'AwsSolutions-EC23',
        reason: 'The service has no inbound rules; its security group only allows outbound traffic.',
      },
    ],
    true,
  );
}

/** The build id of the workers an image built from `projectRoot` runs: its lib/workflow-bundle.js's. */
function bundleBuildId(projectRoot: string): string {
  const bundle = path.join(projectRoot, 'lib', 'workflow-bundle.js');
  if (!existsSync(bundle))
    throw new Error(
      `${bundle} is missing: run \`npm run build\` before \`cdk synth\`, or pass -c workerBuildId=… with -c workerImage=…`,
    );
  return buildIdOf(readFileSync(bundle, 'utf8'));
}

/** What the worker image's build context leaves out (the Dockerfile needs lib/, bin/ and the lockfile). */
export const DOCKER_CONTEXT_EXCLUDES = [
  'node_modules',
  '.git',
  '.tools',
  '.temporal',
  'cdk.out',
  'test',
  'docs',
  '**/*.test.ts',
  '**/*.map',
];
