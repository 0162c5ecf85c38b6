/**
 * The workers of one version (docs/DEPLOY.md#rolling-workers): its workflow workers on Fargate and its
 * tool workers on Fargate or EC2, each a service named by the build id. A version's services are never
 * replaced by another version's: the new version starts beside the old ones and makes itself current once
 * it polls; an old one keeps running the tasks pinned to it until it is drained and dropped from
 * `drainingWorkers`, then CloudFormation removes it. (One service rolled from one image to the next would
 * stop the old workers while tasks are still pinned to them: nothing else could ever run those.)
 *
 * ```ts
 * const v = new VersionWorkers(stack, 'VersionPart-0.1.0-3f9a0c1b2d4e', { fleet, buildId, image, current: true });
 * v.toolService.taskDefinition.taskDefinitionArn;
 * ```
 */
import { Duration } from 'aws-cdk-lib';
import { SubnetType } from 'aws-cdk-lib/aws-ec2';
import {
  type AsgCapacityProvider,
  type BaseService,
  type Cluster,
  type ContainerImage,
  Ec2Service,
  Ec2TaskDefinition,
  FargateService,
  FargateTaskDefinition,
  LinuxParameters,
  LogDrivers,
  NetworkMode,
  type Secret as EcsSecret,
  type TaskDefinition,
} from 'aws-cdk-lib/aws-ecs';
import type { ILogGroup } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import type { WorkerEnvName } from '../workers/env';
import type { Observability } from './observability';
import { type ScaleRange, scaleWorkers } from './scaling';
import type { StarrySecrets } from './secrets';
import { StackPart } from './stack-part';
import { TOOL_TASK_QUEUE } from './task-queues';
import type { WorkerRoles } from './worker-roles';
import { TOOL_WORKER_POLICY, type Workspaces } from './workspaces';

/**
 * Agents a workflow worker (2 GB) keeps cached between their tasks (STARRY_MAX_CACHED_WORKFLOWS): ~0.7 GB
 * of RSS at ~0.7 MB each; an agent evicted from it replays its history at its next task.
 */
export const WORKFLOW_CACHE = 1000;

/** What every version's services share. */
export interface WorkerFleet {
  temporalAddress: string;
  temporalNamespace: string;
  cluster: Cluster;
  roles: WorkerRoles;
  secrets: StarrySecrets;
  /** The log group every worker writes to (a stream prefix per version and kind). */
  logGroup: ILogGroup;
  alertTopic: ITopic;
  transcripts: IBucket;
  workspaces: Workspaces;
  /** The collector beside each worker; unset: observability is off. */
  observability?: Observability;
  /** The tool workers' EC2 capacity; unset: they run on Fargate. */
  toolCapacity?: AsgCapacityProvider;
  /** Each kind's services scale between these; the current version's also on its queue's backlog. */
  range: { workflow: ScaleRange; tools: ScaleRange };
}

export interface VersionWorkersProps {
  fleet: WorkerFleet;
  buildId: string;
  image: ContainerImage;
  /** The current version: it makes itself current, and its services scale on the backlog too. */
  current: boolean;
}

/** The two services of one version. */
export class VersionWorkers extends StackPart {
  /** The workflow workers: the agent and task workflows, the LLM calls, alerts; no tool code. */
  readonly service: FargateService;
  /** The tool workers (`starry worker --tools`). */
  readonly toolService: BaseService;

  constructor(scope: Construct, id: string, props: VersionWorkersProps) {
    super(scope, id);
    const { fleet, buildId } = props;
    const environment = {
      TEMPORAL_ADDRESS: fleet.temporalAddress,
      TEMPORAL_NAMESPACE: fleet.temporalNamespace,
      STARRY_TOOL_TASK_QUEUE: TOOL_TASK_QUEUE,
      STARRY_STORE_BUCKET: fleet.transcripts.bucketName,
      ...fleet.observability?.workerEnvironment(buildId),
    } satisfies Partial<Record<WorkerEnvName, string>>;
    this.service = this.workflowWorkers(props, environment);
    this.toolService = this.toolWorkers(props, environment);
  }

  private workflowWorkers(props: VersionWorkersProps, environment: Record<string, string>): FargateService {
    const { fleet, buildId, current } = props;
    const id = `Workers-${buildId}`;
    const task = new FargateTaskDefinition(this.stack, `${id}-Task`, {
      cpu: 1024,
      memoryLimitMiB: 2048,
      taskRole: fleet.roles.workflow,
    });
    const worker = task.addContainer('worker', {
      image: props.image,
      command: ['node', 'bin/starry.js', 'worker'],
      environment: {
        ...environment,
        STARRY_ALERT_TOPIC_ARN: fleet.alertTopic.topicArn,
        // The sticky cache sized to the task's 2 GB: ~0.7 MB of RSS a cached agent over a ~0.3 GB base
        // (docs/BENCHMARKS.md). The SDK's default follows the heap limit, which need not follow the task's memory.
        STARRY_MAX_CACHED_WORKFLOWS: String(WORKFLOW_CACHE),
        // The new version becomes current once its workers poll, and wakes the agents of the old ones;
        // a draining version never touches the routing (a late task of it cannot roll it back).
        ...(current ? { STARRY_MAKE_CURRENT: 'always' } : {}),
      } satisfies Partial<Record<WorkerEnvName, string>>,
      secrets: fleet.secrets.workflowWorkerSecrets() as Record<string, EcsSecret>,
      logging: LogDrivers.awsLogs({ streamPrefix: `worker-${buildId}`, logGroup: fleet.logGroup }),
      // SIGTERM, then 60 s: the worker lets activities in flight finish for 45 s (shutdownGraceTime).
      stopTimeout: Duration.seconds(60),
    });
    fleet.observability?.addCollector(task, worker);
    const service = new FargateService(this.stack, id, {
      cluster: fleet.cluster,
      taskDefinition: task,
      desiredCount: fleet.range.workflow.min,
      assignPublicIp: true,
      // A change to one version's service (its secrets, its size) starts new workers of the same
      // version before the old ones stop: pinned tasks move to them, nothing is stranded.
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { rollback: true },
    });
    scaleWorkers(service, fleet.cluster, fleet.range.workflow, current);
    suppressTaskFindings(task, service);
    return service;
  }

  /**
   * The tool workers of the same image: the workspaces mounted at their root, Temporal's credentials and
   * no other secret. On EC2 bubblewrap can confine each program (docs/DEPLOY.md#shellrun-on-ec2); on
   * Fargate shell.run refuses (no namespaces).
   */
  private toolWorkers(props: VersionWorkersProps, environment: Record<string, string>): BaseService {
    const { fleet, buildId } = props;
    const capacity = fleet.toolCapacity;
    const id = `ToolWorkers-${buildId}`;
    const task = this.toolTask(fleet, `${id}-Task`);
    const worker = task.addContainer('worker', {
      image: props.image,
      command: ['node', 'bin/starry.js', 'worker', '--tools'],
      environment: { ...environment, STARRY_WORKER_POLICY: TOOL_WORKER_POLICY } satisfies Partial<
        Record<WorkerEnvName, string>
      >,
      secrets: fleet.secrets.toolWorkerSecrets() as Record<string, EcsSecret>,
      logging: LogDrivers.awsLogs({ streamPrefix: `tools-${buildId}`, logGroup: fleet.logGroup }),
      stopTimeout: Duration.seconds(60),
      ...(capacity
        ? {
            // The task's 1 vCPU and 2 GiB, less the collector's share.
            cpu: 768,
            memoryLimitMiB: 1792,
            ...sandboxSettings(this.stack, `${id}-Linux`),
          }
        : {}),
    });
    fleet.workspaces.mountOn(worker);
    fleet.observability?.addCollector(task, worker);
    const common = {
      cluster: fleet.cluster,
      desiredCount: fleet.range.tools.min,
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { rollback: true },
    };
    const service = capacity
      ? new Ec2Service(this.stack, id, {
          ...common,
          taskDefinition: task,
          capacityProviderStrategies: [{ capacityProvider: capacity.capacityProviderName, weight: 1 }],
          vpcSubnets: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
        })
      : new FargateService(this.stack, id, { ...common, taskDefinition: task, assignPublicIp: true });
    fleet.workspaces.allowFrom(service);
    scaleWorkers(service, fleet.cluster, fleet.range.tools, props.current);
    suppressTaskFindings(task, service);
    return service;
  }

  /** A tool worker task: on the EC2 capacity when there is one (awsvpc: its own network interface), else on Fargate. */
  private toolTask(fleet: WorkerFleet, id: string): TaskDefinition {
    const common = { taskRole: fleet.roles.tools, volumes: [...fleet.workspaces.volumes] };
    return fleet.toolCapacity
      ? new Ec2TaskDefinition(this.stack, id, { networkMode: NetworkMode.AWS_VPC, ...common })
      : new FargateTaskDefinition(this.stack, id, { cpu: 1024, memoryLimitMiB: 2048, ...common });
  }
}

/**
 * What bubblewrap needs in an ECS container on EC2 (docs/DEPLOY.md#shellrun-on-ec2). Docker's default
 * seccomp profile refuses pivot_root to every container, and unshare and mount to one without
 * CAP_SYS_ADMIN; it also masks paths of /proc, under which the kernel refuses the fresh /proc a sandbox
 * mounts in its user namespace. Docker would lift just these two (`--security-opt seccomp=unconfined`,
 * `systempaths=unconfined`); ECS offers neither, only `privileged`, which lifts both. Narrower ECS settings
 * do not do: `dockerSecurityOptions` takes only no-new-privileges, AppArmor, SELinux labels and credential
 * specs; adding the SYS_ADMIN capability (linuxParameters) opens unshare and mount in Docker's profile but
 * never pivot_root, nor the masked /proc; systemControls set sysctls only.
 * test/integration/sandbox-container.test.ts reproduces both refusals without Docker. The worker still runs
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
