/**
 * The synthesized stack, offline: what each part runs and may do, and cdk-nag's AwsSolutions pack with
 * every finding fixed or acknowledged with a reason.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { App, Aspects } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { API_ENV_NAMES } from '../api/env';
import { parseWorkerPolicy } from '../core/worker-policy';
import { WorkerEnvSchema } from '../workers/env';
import { CLOUDWATCH_METRICS, type collectorConfig } from './observability';
import { StarryStack } from './stack';

const projectRoot = path.join(__dirname, '..');

function synth(over: Partial<ConstructorParameters<typeof StarryStack>[2]> = {}) {
  const app = new App();
  const stack = new StarryStack(app, 'Test', {
    temporalAddress: 'my-ns.a1b2c.tmprl.cloud:7233',
    temporalNamespace: 'my-ns.a1b2c',
    temporalAuth: 'api-key',
    alertEmail: 'ops@example.com',
    workerImage: 'public.ecr.aws/example/openstarry:1',
    workerBuildId: '0.1.0-bbbbbbbbbbbb',
    projectRoot,
    ...over,
  });
  Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  app.synth();
  return { stack, template: Template.fromStack(stack) };
}

let draining: ReturnType<typeof synth> | undefined;
/** The stack with one draining version beside the current one (synthesized once). */
const synthDraining = () =>
  (draining ??= synth({
    drainingWorkers: [{ buildId: '0.1.0-aaaaaaaaaaaa', image: 'public.ecr.aws/example/openstarry:0' }],
  }));

let ec2: ReturnType<typeof synth> | undefined;
/** The stack with the tool workers on EC2 (synthesized once). */
const synthEc2 = () => (ec2 ??= synth({ toolCompute: 'ec2' }));

jest.setTimeout(120_000);
const { stack, template } = synth();
const json = JSON.stringify(template.toJSON());

interface Container {
  Name: string;
  Image: string;
  Essential?: boolean;
  Environment?: { Name: string; Value: unknown }[];
  Secrets?: { Name: string }[];
  [key: string]: unknown;
}
/** The task definitions whose logical id starts with `prefix` (`Workers` or `ToolWorkers`, then the build id). */
function taskDefs(t: Template, prefix = 'Workers') {
  return Object.entries(t.findResources('AWS::ECS::TaskDefinition'))
    .filter(([id]) => id.startsWith(prefix))
    .map(([, def]) => def as { Properties: Record<string, unknown> & { ContainerDefinitions: Container[] } });
}
/** The containers of the (first) workflow worker task definition, or of the tool workers'. */
function containers(t: Template, prefix = 'Workers'): Container[] {
  return taskDefs(t, prefix)[0]?.Properties.ContainerDefinitions ?? [];
}
/** The statements of the one policy of a role (its logical id starts with `role`). */
function roleStatements(t: Template, role: string) {
  const policies = Object.values(t.findResources('AWS::IAM::Policy')).filter((p) =>
    (p.Properties.Roles as { Ref?: string }[]).some((r) => r.Ref?.startsWith(role)),
  );
  expect(policies).toHaveLength(1);
  return policies[0]?.Properties.PolicyDocument.Statement as {
    Action: string | string[];
    Resource: unknown;
    Condition?: unknown;
  }[];
}
const taskRoleStatements = (t: Template) => roleStatements(t, 'WorkerTaskRole');
const bucketArn = { 'Fn::GetAtt': [expect.stringMatching(/^Transcripts/), 'Arn'] };
const objects = { 'Fn::Join': ['', [bucketArn, '/*']] };
/** What the worker's own code may do: alerts and transcripts. */
const APP_STATEMENTS = [
  { Action: 'sns:Publish', Effect: 'Allow', Resource: { Ref: expect.stringMatching(/^Alerts/) } },
  { Action: ['s3:GetObject*', 's3:GetBucket*', 's3:List*'], Effect: 'Allow', Resource: [bucketArn, objects] },
  { Action: expect.arrayContaining(['s3:PutObject']), Effect: 'Allow', Resource: objects },
];
/** What its collector may do: spans to the X-Ray OTLP endpoint, EMF records into the stack's own group. */
const TELEMETRY_STATEMENTS = [
  { Action: ['xray:PutSpans', 'xray:PutSpansForIndexing'], Effect: 'Allow', Resource: '*' },
  {
    Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
    Effect: 'Allow',
    Resource: { 'Fn::GetAtt': [expect.stringMatching(/^ObservabilityMetricsLogs/), 'Arn'] },
  },
];

describe('the workers on Fargate', () => {
  it('run `starry worker` with Temporal from the props and every secret from Secrets Manager', () => {
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: Match.arrayWith([
        Match.objectLike({
          Image: 'public.ecr.aws/example/openstarry:1',
          Command: ['node', 'bin/starry.js', 'worker'],
          StopTimeout: 60,
          Environment: Match.arrayWith([
            { Name: 'TEMPORAL_ADDRESS', Value: 'my-ns.a1b2c.tmprl.cloud:7233' },
            { Name: 'TEMPORAL_NAMESPACE', Value: 'my-ns.a1b2c' },
            { Name: 'STARRY_TOOL_TASK_QUEUE', Value: 'openstarry-tools' },
            { Name: 'STARRY_STORE_BUCKET', Value: { Ref: Match.stringLikeRegexp('^Transcripts') } },
            Match.objectLike({ Name: 'STARRY_ALERT_TOPIC_ARN' }),
            { Name: 'STARRY_MAX_CACHED_WORKFLOWS', Value: '1000' },
          ]),
          Secrets: [
            Match.objectLike({ Name: 'OPENAI_API_KEY', ValueFrom: { Ref: Match.stringLikeRegexp('^OpenAiApiKey') } }),
            Match.objectLike({ Name: 'GEMINI_API_KEY', ValueFrom: { Ref: Match.stringLikeRegexp('^GeminiApiKey') } }),
            Match.objectLike({
              Name: 'TEMPORAL_API_KEY',
              ValueFrom: { Ref: Match.stringLikeRegexp('^TemporalApiKey') },
            }),
          ],
        }),
      ]),
    });
  });

  it('set only variables the worker reads (workers/env.ts)', () => {
    const worker = containers(template).find((c) => c.Name === 'worker');
    const names = [...(worker?.Environment ?? []), ...(worker?.Secrets ?? [])].map((v) => v.Name);
    expect(names.length).toBeGreaterThan(3);
    expect(names.filter((n) => !(n in WorkerEnvSchema.shape))).toEqual([]);
  });

  it('run each worker version as its own service, named by its build id: the new one makes itself current, a draining one keeps its pinned tasks until it is dropped', () => {
    const { template: t } = synthDraining();
    const services = t.findResources('AWS::ECS::Service');
    // Each version has its workflow workers and its tool workers.
    expect(Object.keys(services).map((id) => id.replace(/[0-9A-F]{8}$/, ''))).toEqual([
      'Workers010aaaaaaaaaaaaService',
      'ToolWorkers010aaaaaaaaaaaaService',
      'Workers010bbbbbbbbbbbbService',
      'ToolWorkers010bbbbbbbbbbbbService',
    ]);
    const defs = taskDefs(t) as Array<{
      Properties: { ContainerDefinitions: Array<{ Image: string; Environment: { Name: string; Value: unknown }[] }> };
    }>;
    const byImage = new Map(
      defs.map((d) => [
        d.Properties.ContainerDefinitions[0]!.Image,
        d.Properties.ContainerDefinitions[0]!.Environment.find((e) => e.Name === 'STARRY_MAKE_CURRENT')?.Value,
      ]),
    );
    expect(byImage).toEqual(
      new Map([
        ['public.ecr.aws/example/openstarry:0', undefined],
        ['public.ecr.aws/example/openstarry:1', 'always'],
      ]),
    );
    // The new version's services wait for the draining ones, whose workers run its old agents' last turn.
    for (const kind of ['Workers', 'ToolWorkers']) {
      const newest = Object.entries(services).find(([id]) => id.startsWith(`${kind}010bbbbbbbbbbbb`))?.[1] as {
        DependsOn?: string[];
      };
      expect(newest.DependsOn).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^Workers010aaaaaaaaaaaaService/),
          expect.stringMatching(/^ToolWorkers010aaaaaaaaaaaaService/),
        ]),
      );
    }
    // Each version replaces its own workers only: the new ones first.
    template.hasResourceProperties('AWS::ECS::Service', {
      DeploymentConfiguration: Match.objectLike({ MinimumHealthyPercent: 100, MaximumPercent: 200 }),
    });
    expect(() => synth({ drainingWorkers: [{ buildId: '0.1.0-bbbbbbbbbbbb', image: 'x' }] })).toThrow(/listed twice/);
  });

  it('keep at least one worker and scale on CPU', () => {
    template.hasResourceProperties('AWS::ECS::Service', { DesiredCount: 1, LaunchType: 'FARGATE' });
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalableTarget', { MinCapacity: 1, MaxCapacity: 4 });
    template.hasResourceProperties('AWS::ApplicationAutoScaling::ScalingPolicy', {
      TargetTrackingScalingPolicyConfiguration: Match.objectLike({
        PredefinedMetricSpecification: { PredefinedMetricType: 'ECSServiceAverageCPUUtilization' },
        TargetValue: 60,
      }),
    });
  });

  it('may publish to the alert topic, read and write the transcript bucket, and send its telemetry, nothing else (no delete); the task role has no other policy', () => {
    const statements = taskRoleStatements(template);
    expect(statements).toEqual([...APP_STATEMENTS, ...TELEMETRY_STATEMENTS]);
    expect(statements.flatMap((st) => st.Action).filter((a) => /Delete|^s3:\*$|^logs:CreateLogGroup$/.test(a))).toEqual(
      [],
    );
  });

  it('may call the Bedrock models the deployment names (bedrockModels), with bedrock:InvokeModel on their ARNs only, cdk-nag still clean', () => {
    const { stack: withBedrock, template: t } = synth({
      bedrockModels: ['amazon.nova-lite-v1:0', 'us.anthropic.claude-3-5-haiku-20241022-v1:0'],
    });
    const arn = (...parts: unknown[]) => ({ 'Fn::Join': ['', parts] });
    const partition = { Ref: 'AWS::Partition' };
    const region = { Ref: 'AWS::Region' };
    expect(taskRoleStatements(t)).toEqual([
      ...APP_STATEMENTS,
      {
        Action: 'bedrock:InvokeModel',
        Effect: 'Allow',
        Resource: [
          arn('arn:', partition, ':bedrock:', region, '::foundation-model/amazon.nova-lite-v1:0'),
          // A cross-region profile, and the model it routes to in whichever region it picks.
          arn(
            'arn:',
            partition,
            ':bedrock:',
            region,
            ':',
            { Ref: 'AWS::AccountId' },
            ':inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0',
          ),
          arn('arn:', partition, ':bedrock:*::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0'),
        ],
      },
      ...TELEMETRY_STATEMENTS,
    ]);
    // Without the context the role may call no model.
    expect(json).not.toContain('bedrock:');
    expect(Annotations.fromStack(withBedrock).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'))).toEqual([]);
  });

  it('alarm on worker errors, to the alert topic', () => {
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      MetricTransformations: [Match.objectLike({ MetricName: 'WorkerErrors' })],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'WorkerErrors',
      AlarmActions: [{ Ref: Match.stringLikeRegexp('^Alerts') }],
    });
  });
});

type Resource = { Properties: Record<string, unknown>; DeletionPolicy?: string; UpdateReplacePolicy?: string };
const resources = (t: Template, type: string, prefix = '') =>
  Object.entries(t.findResources(type)).filter(([id]) => id.startsWith(prefix)) as [string, Resource][];
const only = (t: Template, type: string, prefix = '') => {
  const found = resources(t, type, prefix);
  expect(found).toHaveLength(1);
  return found[0]!;
};
const LLM_SECRETS = ['OPENAI_API_KEY', 'GEMINI_API_KEY'];

describe.each([
  ['fargate', () => ({ template, stack })],
  ['ec2', synthEc2],
] as const)('the tool workers (toolCompute %s)', (compute, get) => {
  it('run `starry worker --tools` on the tool task queue, with the Temporal key and no LLM secret; the workflow workers set the same tool queue and keep the LLM secrets', () => {
    const { template: t } = get();
    const tool = containers(t, 'ToolWorkers').find((c) => c.Name === 'worker');
    expect(tool).toMatchObject({ Command: ['node', 'bin/starry.js', 'worker', '--tools'] });
    expect(tool?.Environment).toEqual(
      expect.arrayContaining([
        { Name: 'STARRY_TOOL_TASK_QUEUE', Value: 'openstarry-tools' },
        {
          Name: 'STARRY_WORKER_POLICY',
          Value: JSON.stringify({ roots: ['/workspaces'], journalDir: '/var/lib/starry/journal' }),
        },
      ]),
    );
    expect(tool?.Secrets?.map((x) => x.Name)).toEqual(['TEMPORAL_API_KEY']);
    // Nor does its environment name an LLM key, nor may its execution role read one.
    expect((tool?.Environment ?? []).map((e) => e.Name).filter((n) => LLM_SECRETS.includes(n))).toEqual([]);
    const [, execPolicy] = only(t, 'AWS::IAM::Policy', 'ToolWorkers010bbbbbbbbbbbbTaskExecutionRole');
    expect(JSON.stringify(execPolicy)).not.toMatch(/OpenAiApiKey|GeminiApiKey/);
    const workflow = containers(t).find((c) => c.Name === 'worker');
    expect(workflow?.Environment).toEqual(
      expect.arrayContaining([{ Name: 'STARRY_TOOL_TASK_QUEUE', Value: 'openstarry-tools' }]),
    );
    expect(workflow?.Secrets?.map((x) => x.Name)).toEqual(expect.arrayContaining(LLM_SECRETS));
    // Every variable either kind gets is one the worker reads.
    const names = [...(tool?.Environment ?? []), ...(tool?.Secrets ?? [])].map((v) => v.Name);
    expect(names.filter((n) => !(n in WorkerEnvSchema.shape))).toEqual([]);
    // Its policy is one the worker accepts: the workspaces its one root, the journal outside them.
    const policy = String(tool?.Environment?.find((e) => e.Name === 'STARRY_WORKER_POLICY')?.Value ?? '');
    expect(parseWorkerPolicy(JSON.parse(policy))).toMatchObject({
      roots: ['/workspaces'],
      journalDir: '/var/lib/starry/journal',
    });
  });

  it('mount the EFS workspaces at /workspaces and the call journal beside them, each through its access point, with IAM and TLS; the workflow workers mount nothing', () => {
    const { template: t } = get();
    const [def] = taskDefs(t, 'ToolWorkers');
    const [fsId] = only(t, 'AWS::EFS::FileSystem', 'Workspaces');
    const [apId] = only(t, 'AWS::EFS::AccessPoint', 'WorkspacesWorkspaceAccess');
    const [journalId] = only(t, 'AWS::EFS::AccessPoint', 'WorkspacesJournalAccess');
    const volume = (name: string, accessPoint: unknown) => ({
      Name: name,
      EFSVolumeConfiguration: {
        FilesystemId: { Ref: fsId },
        TransitEncryption: 'ENABLED',
        AuthorizationConfig: { AccessPointId: { Ref: accessPoint }, IAM: 'ENABLED' },
      },
    });
    expect(def?.Properties.Volumes).toEqual([volume('workspaces', apId), volume('journal', journalId)]);
    expect(def?.Properties.ContainerDefinitions.find((c) => c.Name === 'worker')?.MountPoints).toEqual([
      { ContainerPath: '/workspaces', ReadOnly: false, SourceVolume: 'workspaces' },
      { ContainerPath: '/var/lib/starry/journal', ReadOnly: false, SourceVolume: 'journal' },
    ]);
    for (const workflow of taskDefs(t)) {
      expect(workflow.Properties.Volumes).toBeUndefined();
      for (const c of workflow.Properties.ContainerDefinitions) expect(c.MountPoints).toBeUndefined();
    }
  });

  it('may read and write transcripts, mount and write the workspaces and the journal through their access points, and send telemetry: no alert topic, Bedrock or secret', () => {
    const { template: t } = get();
    const [fsId] = only(t, 'AWS::EFS::FileSystem', 'Workspaces');
    const [apId] = only(t, 'AWS::EFS::AccessPoint', 'WorkspacesWorkspaceAccess');
    const [journalId] = only(t, 'AWS::EFS::AccessPoint', 'WorkspacesJournalAccess');
    const arnOf = (accessPoint: unknown) => ({
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':elasticfilesystem:',
          { Ref: 'AWS::Region' },
          ':',
          { Ref: 'AWS::AccountId' },
          ':access-point/',
          { Ref: accessPoint },
        ],
      ],
    });
    expect(roleStatements(t, 'ToolWorkerTaskRole')).toEqual([
      APP_STATEMENTS[1],
      APP_STATEMENTS[2],
      ...TELEMETRY_STATEMENTS,
      {
        Action: ['elasticfilesystem:ClientMount', 'elasticfilesystem:ClientWrite'],
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [fsId, 'Arn'] },
        Condition: {
          StringEquals: {
            'elasticfilesystem:AccessPointArn': [arnOf(apId), arnOf(journalId)],
          },
        },
      },
    ]);
  });

  it('are the only ones that reach the workspaces over NFS', () => {
    const { template: t } = get();
    const [, sg] = only(t, 'AWS::EC2::SecurityGroup', 'WorkspacesSecurityGroup');
    expect(sg.Properties.SecurityGroupIngress).toBeUndefined();
    const ingress = resources(t, 'AWS::EC2::SecurityGroupIngress').filter(([, r]) =>
      JSON.stringify(r.Properties.GroupId).includes('WorkspacesSecurityGroup'),
    );
    expect(ingress.map(([, r]) => r.Properties)).toEqual([
      expect.objectContaining({
        IpProtocol: 'tcp',
        FromPort: 2049,
        ToPort: 2049,
        SourceSecurityGroupId: {
          'Fn::GetAtt': [expect.stringMatching(/^ToolWorkers010bbbbbbbbbbbbSecurityGroup/), 'GroupId'],
        },
      }),
    ]);
  });

  it('scale on their queue backlog per task (steps) with CPU as the floor, between minToolWorkers and maxToolWorkers', () => {
    const { template: t } = compute === 'fargate' ? synth({ minToolWorkers: 2, maxToolWorkers: 7 }) : get();
    const [, target] = only(t, 'AWS::ApplicationAutoScaling::ScalableTarget', 'ToolWorkers');
    expect(target.Properties).toMatchObject(
      compute === 'fargate' ? { MinCapacity: 2, MaxCapacity: 7 } : { MinCapacity: 1, MaxCapacity: 4 },
    );
    const policies = resources(t, 'AWS::ApplicationAutoScaling::ScalingPolicy', 'ToolWorkers').map(
      ([, p]) => p.Properties,
    );
    expect(policies.map((p) => p.PolicyType).sort()).toEqual(['StepScaling', 'StepScaling', 'TargetTrackingScaling']);
    const alarms = resources(t, 'AWS::CloudWatch::Alarm', 'ToolWorkers').map(([, a]) => a.Properties);
    expect(alarms.map((a) => [a.ComparisonOperator, a.Threshold])).toEqual([
      ['LessThanOrEqualToThreshold', 1],
      ['GreaterThanOrEqualToThreshold', 5],
    ]);
    for (const a of alarms) {
      const metrics = a.Metrics as { Id: string; MetricStat?: { Metric: Record<string, unknown> } }[];
      expect(metrics.find((m) => m.Id === 'backlog')?.MetricStat?.Metric).toEqual({
        Namespace: 'OpenStarry',
        MetricName: 'TaskQueueBacklog',
        Dimensions: [{ Name: 'TaskQueue', Value: 'openstarry-tools' }],
      });
    }
  });

  it('output what a one-off task beside them needs: the cluster, their task definition, their network', () => {
    const { template: t } = get();
    const outputs = t.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(outputs.ToolWorkerTaskDefinition?.Value).toEqual({
      Ref: expect.stringMatching(/^ToolWorkers010bbbbbbbbbbbbTask/),
    });
    expect(outputs.ClusterName?.Value).toEqual({ Ref: expect.stringMatching(/^Cluster/) });
    expect(outputs.WorkspaceFileSystemId?.Value).toEqual({ Ref: expect.stringMatching(/^Workspaces/) });
    const network = JSON.stringify(outputs.ToolWorkerNetwork?.Value);
    expect(network).toMatch(/ToolWorkers010bbbbbbbbbbbbSecurityGroup/);
    expect(network).toContain(compute === 'ec2' ? 'assignPublicIp=DISABLED' : 'assignPublicIp=ENABLED');
    expect(network).toMatch(compute === 'ec2' ? /VpctoolsSubnet/ : /VpcpublicSubnet/);
    expect(Object.keys(outputs).includes('ToolCapacityProvider')).toBe(compute === 'ec2');
  });

  it('keep cdk-nag clean', () => {
    const { stack: s } = get();
    const findings = [
      ...Annotations.fromStack(s).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(s).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    expect(findings.map((f) => `${f.id}: ${String(f.entry.data).split(':')[0]}`)).toEqual([]);
  });
});

describe('bad sizes', () => {
  it('refuse a minimum of no worker of either kind, saying why', () => {
    expect(() => synth({ minToolWorkers: 0 })).toThrow(/minToolWorkers must be at least 1, got 0/);
    expect(() => synth({ minWorkers: 0 })).toThrow(/minWorkers must be at least 1, got 0/);
  });
});

describe('the workspaces on EFS', () => {
  it('are encrypted, backed up, kept when the stack goes, and reached through an access point owned by the image user (uid 1000) at /workspaces', () => {
    const [, fs] = only(template, 'AWS::EFS::FileSystem', 'Workspaces');
    expect(fs).toMatchObject({
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: { Encrypted: true, BackupPolicy: { Status: 'ENABLED' } },
    });
    const [, ap] = only(template, 'AWS::EFS::AccessPoint', 'WorkspacesWorkspaceAccess');
    expect(ap.Properties).toMatchObject({
      PosixUser: { Uid: '1000', Gid: '1000' },
      RootDirectory: {
        Path: '/workspaces',
        CreationInfo: { OwnerUid: '1000', OwnerGid: '1000', Permissions: '750' },
      },
    });
    // The call journal: outside the workspaces (no agent reaches it), the same user, its owner's only.
    const [, journal] = only(template, 'AWS::EFS::AccessPoint', 'WorkspacesJournalAccess');
    expect(journal.Properties).toMatchObject({
      PosixUser: { Uid: '1000', Gid: '1000' },
      RootDirectory: { Path: '/journal', CreationInfo: { OwnerUid: '1000', OwnerGid: '1000', Permissions: '700' } },
    });
    template.resourceCountIs('AWS::EFS::AccessPoint', 2);
  });
});

describe('the tool workers on Fargate (the default)', () => {
  it('run on Fargate, unprivileged (shell.run refuses there), with no EC2 capacity or NAT gateway', () => {
    const [, service] = only(template, 'AWS::ECS::Service', 'ToolWorkers');
    expect(service.Properties.LaunchType).toBe('FARGATE');
    expect(containers(template, 'ToolWorkers').find((c) => c.Name === 'worker')?.Privileged).toBeUndefined();
    template.resourceCountIs('AWS::AutoScaling::AutoScalingGroup', 0);
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
  });
});

describe('the tool workers on EC2 (toolCompute ec2)', () => {
  it('run on an ECS capacity provider of their own, in private subnets behind a NAT gateway, each task with its own network interface and security group', () => {
    const { template: t } = synthEc2();
    const [cpId] = only(t, 'AWS::ECS::CapacityProvider');
    const [, service] = only(t, 'AWS::ECS::Service', 'ToolWorkers');
    expect(service.Properties).toMatchObject({
      CapacityProviderStrategy: [{ CapacityProvider: { Ref: cpId }, Weight: 1 }],
      NetworkConfiguration: {
        AwsvpcConfiguration: {
          AssignPublicIp: 'DISABLED',
          SecurityGroups: [{ 'Fn::GetAtt': [expect.stringMatching(/^ToolWorkers.*SecurityGroup/), 'GroupId'] }],
          Subnets: [
            { Ref: expect.stringMatching(/^VpctoolsSubnet1/) },
            { Ref: expect.stringMatching(/^VpctoolsSubnet2/) },
          ],
        },
      },
    });
    expect(service.Properties.LaunchType).toBeUndefined();
    const [def] = taskDefs(t, 'ToolWorkers');
    expect(def?.Properties).toMatchObject({ NetworkMode: 'awsvpc', RequiresCompatibilities: ['EC2'] });
    t.resourceCountIs('AWS::EC2::NatGateway', 1);
    // The workflow workers stay on Fargate.
    const [, workflow] = only(t, 'AWS::ECS::Service', 'Workers');
    expect(workflow.Properties.LaunchType).toBe('FARGATE');
  });

  it('run their worker privileged (what bubblewrap needs under Docker on ECS) as the image user, with an init process; the workflow workers are not privileged', () => {
    const { template: t } = synthEc2();
    const tool = containers(t, 'ToolWorkers').find((c) => c.Name === 'worker');
    expect(tool).toMatchObject({ Privileged: true, LinuxParameters: { InitProcessEnabled: true } });
    // No user override: the Dockerfile's `node`.
    expect(tool?.User).toBeUndefined();
    for (const c of containers(t)) expect(c.Privileged).toBeUndefined();
    expect(containers(t, 'ToolWorkers').find((c) => c.Name === 'otel-collector')?.Privileged).toBeUndefined();
  });

  it('launch ECS-optimized instances with IMDSv2 required at one hop, no metadata for awsvpc tasks, unprivileged user namespaces and encrypted volumes', () => {
    const { template: t } = synthEc2();
    const [, lt] = only(t, 'AWS::EC2::LaunchTemplate');
    const data = lt.Properties.LaunchTemplateData as Record<string, unknown>;
    expect(data.MetadataOptions).toEqual({ HttpTokens: 'required', HttpPutResponseHopLimit: 1 });
    expect(data.BlockDeviceMappings).toEqual([
      { DeviceName: '/dev/xvda', Ebs: { Encrypted: true, VolumeSize: 30, VolumeType: 'gp3' } },
    ]);
    expect(JSON.stringify(data.ImageId)).toMatch(/ecsoptimizedamiamazonlinux2023/);
    expect(data.InstanceType).toBe('t3.medium');
    const userData = JSON.stringify(data.UserData);
    expect(userData).toContain('ECS_AWSVPC_BLOCK_IMDS=true');
    expect(userData).toContain('user.max_user_namespaces = 15000');
  });

  it("give the instances the ECS agent's managed policy and the agent statements on the cluster, nothing else", () => {
    const { template: t } = synthEc2();
    const [, role] = only(t, 'AWS::IAM::Role', 'ToolInstanceRole');
    expect(role.Properties.ManagedPolicyArns).toEqual([
      {
        'Fn::Join': [
          '',
          ['arn:', { Ref: 'AWS::Partition' }, ':iam::aws:policy/service-role/AmazonEC2ContainerServiceforEC2Role'],
        ],
      },
    ]);
    const actions = roleStatements(t, 'ToolInstanceRole').flatMap((st) => st.Action);
    expect(actions.sort()).toEqual([
      'ecr:GetAuthorizationToken',
      'ecs:DeregisterContainerInstance',
      'ecs:DiscoverPollEndpoint',
      'ecs:Poll',
      'ecs:RegisterContainerInstance',
      'ecs:StartTelemetrySession',
      'ecs:Submit*',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
    ]);
  });
});

describe('the backlog metric', () => {
  const fn = (t: Template) => only(t, 'AWS::Lambda::Function', 'BacklogFunction');

  it('is published by infra/backlog/handler.ts for both task queues into the OpenStarry namespace, with the Temporal key as an ARN', () => {
    const [id, f] = fn(template);
    expect(f.Properties).toMatchObject({ Handler: 'index.handler', Runtime: 'nodejs22.x' });
    expect((f.Properties.Environment as { Variables: unknown }).Variables).toEqual({
      TEMPORAL_ADDRESS: 'my-ns.a1b2c.tmprl.cloud:7233',
      TEMPORAL_NAMESPACE: 'my-ns.a1b2c',
      TEMPORAL_API_KEY_SECRET_ARN: { Ref: expect.stringMatching(/^TemporalApiKey/) },
      STARRY_BACKLOG_QUEUES: 'openstarry,openstarry-tools',
      STARRY_METRICS_NAMESPACE: 'OpenStarry',
    });
    // Its bundle is the backlog handler's.
    const key = (f.Properties.Code as { S3Key: string }).S3Key.replace(/\.zip$/, '');
    const bundle = readFileSync(path.join((stack.node.root as App).outdir, `asset.${key}`, 'index.js'), 'utf8');
    expect(bundle).toContain('TaskQueueBacklog');
    // Every minute.
    const [, rule] = only(template, 'AWS::Events::Rule', 'BacklogSchedule');
    expect(rule.Properties).toMatchObject({
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [expect.objectContaining({ Arn: { 'Fn::GetAtt': [id, 'Arn'] } })],
    });
  });

  it('takes the mTLS pair as ARNs with temporalAuth mtls', () => {
    const { template: t } = synth({ temporalAuth: 'mtls' });
    const vars = (fn(t)[1].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(vars).toMatchObject({
      TEMPORAL_TLS_CERT_SECRET_ARN: { Ref: expect.stringMatching(/^TemporalTlsCert/) },
      TEMPORAL_TLS_KEY_SECRET_ARN: { Ref: expect.stringMatching(/^TemporalTlsKey/) },
    });
    expect(vars).not.toHaveProperty('TEMPORAL_API_KEY_SECRET_ARN');
  });

  it('may read the Temporal secret and put metric data into its namespace only', () => {
    expect(roleStatements(template, 'BacklogFunctionServiceRole')).toEqual([
      {
        Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
        Effect: 'Allow',
        Resource: { Ref: expect.stringMatching(/^TemporalApiKey/) },
      },
      {
        Action: 'cloudwatch:PutMetricData',
        Effect: 'Allow',
        Resource: '*',
        Condition: { StringEquals: { 'cloudwatch:namespace': 'OpenStarry' } },
      },
    ]);
  });

  it("scales the current version's workflow workers on the main queue's backlog per running task", () => {
    const alarms = resources(template, 'AWS::CloudWatch::Alarm', 'Workers').map(([, a]) => a.Properties);
    expect(alarms).toHaveLength(2);
    for (const a of alarms) {
      const metrics = a.Metrics as {
        Id: string;
        Expression?: string;
        MetricStat?: { Metric: Record<string, unknown> };
      }[];
      expect(metrics.find((m) => m.Expression)?.Expression).toBe(
        'FILL(backlog, 0) / IF(FILL(tasks, 0) > 0, FILL(tasks, 0), 1)',
      );
      expect(metrics.find((m) => m.Id === 'backlog')?.MetricStat?.Metric.Dimensions).toEqual([
        { Name: 'TaskQueue', Value: 'openstarry' },
      ]);
      expect(metrics.find((m) => m.Id === 'tasks')?.MetricStat?.Metric).toMatchObject({
        Namespace: 'ECS/ContainerInsights',
        MetricName: 'RunningTaskCount',
      });
    }
    const steps = resources(template, 'AWS::ApplicationAutoScaling::ScalingPolicy', 'Workers')
      .map(([, p]) => p.Properties.StepScalingPolicyConfiguration as { StepAdjustments: unknown[] } | undefined)
      .filter((c) => c)
      .flatMap((c) => c!.StepAdjustments);
    expect(steps).toEqual(
      expect.arrayContaining([
        { MetricIntervalUpperBound: 0, ScalingAdjustment: -1 },
        { MetricIntervalLowerBound: 0, MetricIntervalUpperBound: 15, ScalingAdjustment: 1 },
        { MetricIntervalLowerBound: 15, ScalingAdjustment: 3 },
      ]),
    );
  });

  it("leaves a draining version's services on CPU only (the backlog is the new version's work)", () => {
    const { template: t } = synthDraining();
    for (const kind of ['Workers', 'ToolWorkers']) {
      const old = resources(t, 'AWS::ApplicationAutoScaling::ScalingPolicy', `${kind}010aaaaaaaaaaaa`);
      expect(old.map(([, p]) => p.Properties.PolicyType)).toEqual(['TargetTrackingScaling']);
      const current = resources(t, 'AWS::ApplicationAutoScaling::ScalingPolicy', `${kind}010bbbbbbbbbbbb`);
      expect(current).toHaveLength(3);
    }
  });
});

describe('the HTTP API on Lambda', () => {
  it('runs the api/ handler, with secrets as ARNs and no secret value in the template', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Runtime: 'nodejs22.x',
      Environment: {
        Variables: Match.objectLike({
          TEMPORAL_ADDRESS: 'my-ns.a1b2c.tmprl.cloud:7233',
          STARRY_API_JWT_SECRET_ARN: { Ref: Match.stringLikeRegexp('^ApiJwtSecret') },
          TEMPORAL_API_KEY_SECRET_ARN: { Ref: Match.stringLikeRegexp('^TemporalApiKey') },
        }),
      },
    });
    // Every variable the function gets is one the API reads (api/env.ts), and none holds a secret value.
    const fns = template.findResources('AWS::Lambda::Function', { Properties: { Handler: 'index.handler' } });
    const vars = Object.values(fns)[0]?.Properties.Environment.Variables as Record<string, unknown>;
    for (const name of Object.keys(vars))
      expect([name, (API_ENV_NAMES as string[]).includes(name) || name === 'NODE_OPTIONS']).toEqual([name, true]);
    expect(vars).not.toHaveProperty('STARRY_API_JWT_SECRET');
    // One tenant unless the deployment names a tenant claim (apiTenantClaim).
    expect(vars).not.toHaveProperty('STARRY_API_TENANT_CLAIM');
    expect(vars).not.toHaveProperty('TEMPORAL_API_KEY');
    expect(json).not.toMatch(/SecretString"\s*:\s*"/);
  });

  it('routes every request of the HTTP API to it', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: '$default' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      PayloadFormatVersion: '2.0',
    });
  });

  it('may read its own secrets and send its X-Ray segments, and nothing else', () => {
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p).includes('ApiFunctionServiceRole'),
    );
    const actions = policies.flatMap((p) =>
      (p.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).flatMap((s) => s.Action),
    );
    expect([...new Set(actions)].sort()).toEqual([
      'secretsmanager:DescribeSecret',
      'secretsmanager:GetSecretValue',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
  });
});

describe('the streaming API on a function URL', () => {
  const [urlId, url] = Object.entries(template.findResources('AWS::Lambda::Url'))[0] ?? [];
  const fnId = (url?.Properties.TargetFunctionArn as { 'Fn::GetAtt': [string, string] } | undefined)?.['Fn::GetAtt'][0];
  const resource = (id: string | undefined) =>
    template.toJSON().Resources[id ?? ''] as { Properties: Record<string, unknown> };

  it('streams its responses, with no AWS auth (the app checks the JWT), and CORS for GET with Authorization and Last-Event-ID', () => {
    template.resourceCountIs('AWS::Lambda::Url', 1);
    expect(url?.Properties).toEqual({
      AuthType: 'NONE',
      InvokeMode: 'RESPONSE_STREAM',
      TargetFunctionArn: { 'Fn::GetAtt': [fnId, 'Arn'] },
      Cors: {
        AllowOrigins: ['*'],
        AllowMethods: ['GET'],
        AllowHeaders: ['authorization', 'last-event-id'],
        MaxAge: 3600,
      },
    });
    template.hasOutput('StreamUrl', { Value: { 'Fn::GetAtt': [urlId, 'FunctionUrl'] } });
  });

  it("runs api/lambda-stream.ts with the API function's environment, for up to 15 minutes a stream", () => {
    const api = Object.values(
      template.findResources('AWS::Lambda::Function', {
        Properties: { Role: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ApiFunctionServiceRole'), 'Arn'] } },
      }),
    )[0];
    const stream = resource(fnId).Properties;
    expect(fnId).toMatch(/^ApiStreamFunction/);
    expect(stream).toMatchObject({ Handler: 'index.handler', Runtime: 'nodejs22.x', Timeout: 900 });
    expect(stream.Environment).toEqual(api?.Properties.Environment);
    // Its bundle (the asset CDK staged for it) is the streaming entry's.
    const key = (stream.Code as { S3Key: string }).S3Key.replace(/\.zip$/, '');
    const bundle = readFileSync(path.join((stack.node.root as App).outdir, `asset.${key}`, 'index.js'), 'utf8');
    expect(bundle).toContain('awslambda global is missing');
  });

  it('may read the API secrets and send its X-Ray segments, and only those; anyone may invoke it through its URL, and no other way', () => {
    const role = (resource(fnId).Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: role }]))
      .flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string[]; Resource: unknown }[]);
    expect(statements).toEqual([
      expect.objectContaining({ Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], Resource: '*' }),
      expect.objectContaining({
        Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
        Resource: { Ref: expect.stringMatching(/^ApiJwtSecret/) },
      }),
      expect.objectContaining({
        Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
        Resource: { Ref: expect.stringMatching(/^TemporalApiKey/) },
      }),
    ]);
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission'))
      .map((p) => p.Properties)
      .filter((p) => JSON.stringify(p.FunctionName).includes(fnId ?? '?'));
    expect(permissions).toEqual([
      expect.objectContaining({ Action: 'lambda:InvokeFunctionUrl', Principal: '*', FunctionUrlAuthType: 'NONE' }),
      expect.objectContaining({ Action: 'lambda:InvokeFunction', Principal: '*', InvokedViaFunctionUrl: true }),
    ]);
  });
});

describe('the transcript bucket', () => {
  it('is private, encrypted, TLS-only, unversioned, and kept when the stack goes', () => {
    template.resourceCountIs('AWS::S3::Bucket', 1);
    template.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
        VersioningConfiguration: Match.absent(),
        // Deleting the blob of a live task breaks it: nothing expires them.
        LifecycleConfiguration: Match.absent(),
      },
    });
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Action: 's3:*', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
    template.hasOutput('TranscriptBucketName', { Value: { Ref: Match.stringLikeRegexp('^Transcripts') } });
  });
});

describe('alerts and logs', () => {
  it('have a topic with the e-mail subscription, and every log group keeps 30 days', () => {
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    const groups = Object.values(template.findResources('AWS::Logs::LogGroup'));
    expect(groups.length).toBeGreaterThanOrEqual(4);
    for (const g of groups) expect(g.Properties.RetentionInDays).toBe(30);
  });
});

describe('observability (infra/observability.ts)', () => {
  const collector = () => containers(template).find((c) => c.Name === 'otel-collector');
  /** The collector's configuration as the task gets it, with the region and the EMF group filled in. */
  const config = () => {
    const value = collector()?.Environment?.find((e) => e.Name === 'AOT_CONFIG_CONTENT')?.Value as {
      'Fn::Join': ['', unknown[]];
    };
    const text = value['Fn::Join'][1]
      .map((part) =>
        typeof part === 'string'
          ? part
          : JSON.stringify(part) === '{"Ref":"AWS::Region"}'
            ? 'eu-test-1'
            : `<${(part as { Ref: string }).Ref}>`,
      )
      .join('');
    return JSON.parse(text) as ReturnType<typeof collectorConfig>;
  };
  const dashboardBody = () => {
    const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    const parts = (dashboard?.Properties.DashboardBody as { 'Fn::Join': ['', unknown[]] })['Fn::Join'][1];
    return parts.map((p) => (typeof p === 'string' ? p : 'REGION')).join('');
  };
  const declared = (metric: string, dims: string[]) =>
    CLOUDWATCH_METRICS.some(
      (m) =>
        m.name === metric &&
        m.dimensions.some((d) => JSON.stringify([...d].sort()) === JSON.stringify([...dims].sort())),
    );

  it('runs a pinned ADOT collector beside each worker: not essential, its own log group, health-checked without a shell, restarted, started before the worker', () => {
    expect(collector()).toMatchObject({
      Image: expect.stringMatching(/^public\.ecr\.aws\/aws-observability\/aws-otel-collector:v\d+\.\d+\.\d+$/),
      Essential: false,
      Cpu: 256,
      Memory: 256,
      LogConfiguration: {
        LogDriver: 'awslogs',
        Options: expect.objectContaining({
          'awslogs-group': { Ref: expect.stringMatching(/^ObservabilityCollectorLogs/) },
        }),
      },
      HealthCheck: expect.objectContaining({ Command: ['CMD', '/healthcheck'] }),
      RestartPolicy: { Enabled: true, RestartAttemptPeriod: 60 },
    });
    expect(containers(template).find((c) => c.Name === 'worker')?.DependsOn).toEqual([
      { Condition: 'START', ContainerName: 'otel-collector' },
    ]);
    // One per worker version.
    const { template: t } = synthDraining();
    for (const def of Object.values(t.findResources('AWS::ECS::TaskDefinition')))
      expect((def.Properties.ContainerDefinitions as Container[]).map((c) => c.Name)).toEqual([
        'worker',
        'otel-collector',
      ]);
  });

  it("configures it: OTLP in on loopback only, traces to the region's X-Ray OTLP endpoint signed with SigV4, metrics filtered to the declared ones, made deltas and written as EMF into the stack's group", () => {
    const c = config();
    expect(c.receivers.otlp.protocols).toEqual({
      http: { endpoint: '127.0.0.1:4318' },
      grpc: { endpoint: '127.0.0.1:4317' },
    });
    expect(c.extensions).toEqual({
      health_check: { endpoint: '127.0.0.1:13133' },
      sigv4auth: { region: 'eu-test-1', service: 'xray' },
    });
    expect(c.exporters['otlp_http/xray']).toEqual({
      traces_endpoint: 'https://xray.eu-test-1.amazonaws.com/v1/traces',
      auth: { authenticator: 'sigv4auth' },
      compression: 'gzip',
    });
    expect(c.exporters.awsemf).toMatchObject({
      region: 'eu-test-1',
      namespace: 'OpenStarry',
      log_group_name: expect.stringMatching(/^<ObservabilityMetricsLogs/),
      dimension_rollup_option: 'NoDimensionRollup',
    });
    const { traces, metrics } = c.service.pipelines;
    expect([traces.receivers, traces.exporters, metrics.receivers, metrics.exporters]).toEqual([
      ['otlp'],
      ['otlp_http/xray'],
      ['otlp'],
      ['awsemf'],
    ]);
    // The memory limiter first, the batch last; the worker sends deltas itself (no cumulative state here).
    for (const p of [traces, metrics])
      expect([p.processors[0], p.processors.at(-1)]).toEqual(['memory_limiter', 'batch']);
    expect(metrics.processors).not.toContain('cumulativetodelta');
    // Every component a pipeline names is configured, and every configured one is used.
    const used = Object.values(c.service.pipelines).flatMap((p) => [...p.receivers, ...p.processors, ...p.exporters]);
    const defined = [...Object.keys(c.receivers), ...Object.keys(c.processors), ...Object.keys(c.exporters)];
    expect([...new Set(used)].sort()).toEqual(defined.sort());
    expect(c.service.extensions.sort()).toEqual(Object.keys(c.extensions).sort());
    expect(c.exporters.awsemf.metric_descriptors).toEqual(
      CLOUDWATCH_METRICS.map((m) => ({ metric_name: m.name, unit: m.unit, overwrite: true })),
    );
    // The filter keeps exactly the declared metrics; each declaration selects its one metric by name.
    expect(c.processors['filter/cloudwatch'].metrics.metric).toEqual([
      `not (${CLOUDWATCH_METRICS.map((m) => `name == "${m.name}"`).join(' or ')})`,
    ]);
    for (const [i, m] of CLOUDWATCH_METRICS.entries()) {
      const [selector] = c.exporters.awsemf.metric_declarations[i]?.metric_name_selectors ?? [];
      expect([
        m.name,
        new RegExp(selector ?? '$^').test(m.name),
        new RegExp(selector ?? '$^').test(`${m.name}x`),
      ]).toEqual([m.name, true, false]);
    }
  });

  it('points the worker at it: OTLP to the collector on loopback, as openstarry-worker of this stack and build id', () => {
    expect(containers(template).find((c) => c.Name === 'worker')?.Environment).toEqual(
      expect.arrayContaining([
        { Name: 'OTEL_EXPORTER_OTLP_ENDPOINT', Value: 'http://127.0.0.1:4318' },
        { Name: 'OTEL_SERVICE_NAME', Value: 'openstarry-worker' },
        { Name: 'OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE', Value: 'delta' },
        {
          Name: 'OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION',
          Value: 'base2_exponential_bucket_histogram',
        },
        {
          Name: 'OTEL_RESOURCE_ATTRIBUTES',
          Value: 'deployment.environment.name=Test,service.version=0.1.0-bbbbbbbbbbbb',
        },
      ]),
    );
  });

  it('lets the task role write spans and its own EMF group only (exactly the two statements after the app’s)', () => {
    expect(taskRoleStatements(template).slice(APP_STATEMENTS.length)).toEqual(TELEMETRY_STATEMENTS);
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('traces both API functions with X-Ray (active tracing)', () => {
    const fns = Object.values(
      template.findResources('AWS::Lambda::Function', { Properties: { Handler: 'index.handler' } }),
    );
    expect(fns.map((f) => f.Properties.TracingConfig)).toEqual([{ Mode: 'Active' }, { Mode: 'Active' }]);
  });

  it('has a dashboard of tasks by outcome, tokens by model and type, LLM latency p50/p95 by model, pain by code, breaker trips, lockouts by reason, halts, tool duration, ticks and worker errors, each on a declared metric', () => {
    const body = JSON.parse(dashboardBody()) as {
      widgets: { properties: { title?: string; metrics?: unknown[][] } }[];
    };
    const widgets = body.widgets.filter((w) => w.properties.metrics);
    const searches = widgets.flatMap((w) =>
      w.properties.metrics!.flatMap((line) =>
        line
          .map((e) => (e as { expression?: string }).expression)
          .filter((e): e is string => !!e)
          .map((e) => {
            const [, dims, metric, stat] =
              /^SEARCH\('\{OpenStarry,([^}]*)\} MetricName="([^"]+)"', '(\w+)'\)$/.exec(e) ?? [];
            return {
              title: w.properties.title,
              metric,
              stat,
              dims: dims?.split(',').map((d) => JSON.parse(d) as string),
            };
          }),
      ),
    );
    const plain = widgets.flatMap((w) =>
      w.properties.metrics!.filter((line) => line[0] === 'OpenStarry').map((line) => line[1] as string),
    );
    expect(searches.map((s) => `${s.metric} ${s.stat} by ${s.dims?.join('+')}`)).toEqual([
      'starry.tasks Sum by starry.task.outcome',
      'gen_ai.client.token.usage Sum by gen_ai.request.model+gen_ai.token.type',
      'gen_ai.client.operation.duration p50 by gen_ai.request.model',
      'gen_ai.client.operation.duration p95 by gen_ai.request.model',
      'gen_ai.client.operation.duration Average by gen_ai.request.model',
      'starry.pain Sum by starry.pain.code',
      'starry.breaker.trips Sum by starry.breaker.rung',
      'starry.lockouts Sum by starry.lockout.reason',
      'starry.tool.duration p95 by gen_ai.tool.name',
      'starry.tool.duration Average by gen_ai.tool.name',
    ]);
    expect(plain).toEqual(['starry.halts', 'starry.ticks', 'WorkerErrors']);
    // A SEARCH with a schema matches metrics with exactly those dimensions: each must be one the collector declares.
    for (const s of searches)
      expect([s.metric, s.dims, declared(s.metric!, s.dims!)]).toEqual([s.metric, s.dims, true]);
    for (const m of plain.filter((n) => n !== 'WorkerErrors')) expect([m, declared(m, [])]).toEqual([m, true]);
    template.hasResourceProperties('AWS::CloudWatch::Dashboard', { DashboardName: 'Test' });
    template.hasOutput('DashboardName', { Value: { Ref: Match.stringLikeRegexp('^ObservabilityDashboard') } });
    template.hasOutput('DashboardUrl', {
      Value: { 'Fn::Join': ['', Match.arrayWith([Match.stringLikeRegexp('#dashboards/dashboard/$')])] },
    });
  });

  it('alarms on any lockout and any error cascade in 5 minutes, to the alert topic, quiet without data, on declared metrics', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
    const on = (name: string) => alarms.find((a) => a.MetricName === name);
    const common = {
      Namespace: 'OpenStarry',
      Statistic: 'Sum',
      Period: 300,
      EvaluationPeriods: 1,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: expect.stringMatching(/^Alerts/) }],
    };
    expect(on('starry.lockouts')).toEqual({
      ...common,
      MetricName: 'starry.lockouts',
      AlarmDescription: expect.any(String),
    });
    expect(on('starry.breaker.trips')).toEqual({
      ...common,
      MetricName: 'starry.breaker.trips',
      Dimensions: [{ Name: 'starry.breaker.rung', Value: 'ERROR_CASCADE' }],
      AlarmDescription: expect.any(String),
    });
    expect(declared('starry.lockouts', [])).toBe(true);
    expect(declared('starry.breaker.trips', ['starry.breaker.rung'])).toBe(true);
  });

  it('is left out whole with observability: false (no collector, OTEL_* variable, telemetry permission, tracing, dashboard or alarm of its own), cdk-nag still clean', () => {
    const { stack: off, template: t } = synth({ observability: false });
    expect(containers(t).map((c) => c.Name)).toEqual(['worker']);
    expect(containers(t)[0]?.Environment?.filter((e) => e.Name.startsWith('OTEL_'))).toEqual([]);
    expect(taskRoleStatements(t)).toEqual(APP_STATEMENTS);
    const fns = Object.values(t.findResources('AWS::Lambda::Function', { Properties: { Handler: 'index.handler' } }));
    expect(fns.map((f) => f.Properties.TracingConfig)).toEqual([undefined, undefined]);
    t.resourceCountIs('AWS::CloudWatch::Dashboard', 0);
    // Of the alarms that page (the scaling policies' alarms page nobody), only the worker errors'.
    const paging = Object.values(t.findResources('AWS::CloudWatch::Alarm')).filter((a) =>
      JSON.stringify(a.Properties.AlarmActions).includes('Alerts'),
    );
    expect(paging.map((a) => a.Properties.MetricName)).toEqual(['WorkerErrors']);
    expect(Object.keys(t.toJSON().Outputs)).not.toContain('DashboardName');
    expect(Annotations.fromStack(off).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'))).toEqual([]);
  });
});

describe('cdk-nag (AwsSolutions)', () => {
  it('reports no unacknowledged error or warning', () => {
    const findings = [
      ...Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    expect(findings.map((f) => `${f.id}: ${String(f.entry.data).split(':')[0]}`)).toEqual([]);
  });

  it('gives the API functions the mTLS pair as ARNs they may read, with temporalAuth mtls', () => {
    const { template: t } = synth({ temporalAuth: 'mtls' });
    const api = resources(t, 'AWS::Lambda::Function', 'Api');
    expect(api.length).toBe(2);
    for (const [, f] of api) {
      const vars = (f.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(vars).toMatchObject({
        TEMPORAL_TLS_CERT_SECRET_ARN: { Ref: expect.stringMatching(/^TemporalTlsCert/) },
        TEMPORAL_TLS_KEY_SECRET_ARN: { Ref: expect.stringMatching(/^TemporalTlsKey/) },
      });
    }
    const readable = resources(t, 'AWS::IAM::Policy', 'Api').map(([, p]) => JSON.stringify(p.Properties));
    expect(readable.length).toBe(2);
    for (const policy of readable)
      expect(policy).toMatch(/TemporalTlsCert[\s\S]*TemporalTlsKey|TemporalTlsKey[\s\S]*TemporalTlsCert/);
  });

  it('also holds with mTLS, an image built from this repository and tenants on the API', () => {
    const { stack: mtls, template: t } = synth({
      temporalAuth: 'mtls',
      workerImage: undefined,
      alertEmail: undefined,
      apiTenantClaim: 'custom:tenant',
    });
    t.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ STARRY_API_TENANT_CLAIM: 'custom:tenant' }) },
    });
    t.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: Match.arrayWith([
        Match.objectLike({
          Secrets: Match.arrayWith([
            Match.objectLike({ Name: 'TEMPORAL_TLS_CERT' }),
            Match.objectLike({ Name: 'TEMPORAL_TLS_KEY' }),
          ]),
        }),
      ]),
    });
    expect(Annotations.fromStack(mtls).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'))).toEqual([]);
  });
});
