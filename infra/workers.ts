/**
 * Every worker version's services (docs/DEPLOY.md#rolling-workers): the current version, built from this
 * repository or given as an image, beside the versions still draining; the tool workers' EC2 capacity when
 * they run there; and the outputs a one-off tool task needs.
 *
 * ```ts
 * const workers = new Workers(stack, 'WorkersPart', { ...props, fleet });
 * workers.currentBuildId; // '0.1.0-3f9a0c1b2d4e'
 * ```
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CfnOutput, Fn } from 'aws-cdk-lib';
import type { SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import { type BaseService, ContainerImage } from 'aws-cdk-lib/aws-ecs';
import type { Construct } from 'constructs';
import { buildIdOf } from '../workers/versioning';
import { StackPart } from './stack-part';
import { TASK_QUEUE, TOOL_TASK_QUEUE } from './task-queues';
import { ToolInstances } from './tool-instances';
import { VersionWorkers, type WorkerFleet } from './version-workers';

/** A version of the workers (a Worker Deployment Version, workers/versioning.ts): its build id and its image. */
export interface WorkerVersion {
  buildId: string;
  image: string;
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

export interface WorkersProps {
  /** What every version's services share, but their scaling range and the EC2 capacity (made here). */
  fleet: Omit<WorkerFleet, 'range' | 'toolCapacity'>;
  vpc: Vpc;
  /** The subnets the tool workers run in (the Network part's toolSubnetType). */
  toolSubnetType: SubnetType;
  /** StarryStackProps' worker settings (infra/stack.ts documents each). */
  workerImage?: string;
  workerBuildId?: string;
  drainingWorkers?: WorkerVersion[];
  minWorkers?: number;
  maxWorkers?: number;
  toolCompute: 'fargate' | 'ec2';
  minToolWorkers?: number;
  maxToolWorkers?: number;
  toolInstanceType?: string;
  projectRoot: string;
}

/** The services of every version, the current one last. */
export class Workers extends StackPart {
  /** The build id of the current version (the WorkerBuildId output). */
  readonly currentBuildId: string;
  /** Each version's two services, the draining versions first. */
  readonly versions: VersionWorkers[];

  constructor(scope: Construct, id: string, props: WorkersProps) {
    super(scope, id);
    const toolCapacity =
      props.toolCompute === 'ec2'
        ? new ToolInstances(this, 'ToolInstancesPart', {
            cluster: props.fleet.cluster,
            vpc: props.vpc,
            maxInstances: props.maxToolWorkers ?? 4,
            ...(props.toolInstanceType ? { instanceType: props.toolInstanceType } : {}),
          }).provider
        : undefined;
    const versions = workerVersions(props);
    this.currentBuildId = versions.at(-1)!.buildId;
    const fleet: WorkerFleet = { ...props.fleet, range: scaleRanges(props), ...(toolCapacity ? { toolCapacity } : {}) };
    const assetImage = ContainerImage.fromAsset(props.projectRoot, {
      platform: Platform.LINUX_AMD64,
      exclude: DOCKER_CONTEXT_EXCLUDES,
    });
    this.versions = versions.map(
      (v, i) =>
        new VersionWorkers(this, `VersionPart-${v.buildId}`, {
          fleet,
          buildId: v.buildId,
          image: v.asset ? assetImage : ContainerImage.fromRegistry(v.image),
          current: i === versions.length - 1,
        }),
    );
    // The draining versions' services exist before the new one starts: its workers wake the old
    // agents, which continue as new on their own version's workers first.
    const newest = this.versions.at(-1)!;
    for (const old of this.versions.slice(0, -1))
      for (const service of [old.service, old.toolService])
        for (const n of [newest.service, newest.toolService]) n.node.addDependency(service);
    this.outputs(props, newest.toolService, toolCapacity?.capacityProviderName);
  }

  /** What `aws ecs run-task` needs to start a one-off task like the current tool workers (docs/DEPLOY.md). */
  private outputs(props: WorkersProps, toolService: BaseService, capacityProvider: string | undefined): void {
    new CfnOutput(this.stack, 'ToolWorkerTaskDefinition', {
      value: toolService.taskDefinition.taskDefinitionArn,
      description: 'The current tool workers: run a one-off task of it to put files into /workspaces (docs/DEPLOY.md)',
    });
    const toolSubnets = props.vpc.selectSubnets({ subnetType: props.toolSubnetType }).subnetIds;
    const toolGroups = toolService.connections.securityGroups.map((g) => g.securityGroupId);
    new CfnOutput(this.stack, 'ToolWorkerNetwork', {
      value: `awsvpcConfiguration={subnets=[${Fn.join(',', toolSubnets)}],securityGroups=[${Fn.join(',', toolGroups)}],assignPublicIp=${capacityProvider ? 'DISABLED' : 'ENABLED'}}`,
      description: "aws ecs run-task --network-configuration of a one-off task like the tool workers'",
    });
    if (capacityProvider) new CfnOutput(this.stack, 'ToolCapacityProvider', { value: capacityProvider });
    new CfnOutput(this.stack, 'WorkerBuildId', {
      value: this.currentBuildId,
      description:
        'The current worker version: list it in drainingWorkers, with its image, when you deploy the next one',
    });
  }
}

/** The draining versions, then the current one (an asset built from the repository unless `workerImage`), checked. */
function workerVersions(props: WorkersProps): (WorkerVersion & { asset: boolean })[] {
  const current = {
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
  return versions;
}

/** Each kind's scaling range, checked: at least one worker of each kind. */
function scaleRanges(props: WorkersProps): WorkerFleet['range'] {
  for (const [key, value] of [
    ['minWorkers', props.minWorkers],
    ['minToolWorkers', props.minToolWorkers],
  ] as const)
    if (value !== undefined && value < 1)
      throw new Error(
        `${key} must be at least 1, got ${value}: a task waits seconds for a worker of each kind, less than a service takes to scale up from none`,
      );
  return {
    workflow: { min: props.minWorkers ?? 1, max: props.maxWorkers ?? 4, queue: TASK_QUEUE },
    tools: { min: props.minToolWorkers ?? 1, max: props.maxToolWorkers ?? 4, queue: TOOL_TASK_QUEUE },
  };
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
