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
import { WorkerEnvSchema } from '../workers/env';
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

jest.setTimeout(120_000);
const { stack, template } = synth();
const json = JSON.stringify(template.toJSON());

describe('the workers on Fargate', () => {
  it('run `starry worker` with Temporal from the props and every secret from Secrets Manager', () => {
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      ContainerDefinitions: [
        Match.objectLike({
          Image: 'public.ecr.aws/example/openstarry:1',
          Command: ['node', 'bin/starry.js', 'worker'],
          StopTimeout: 60,
          Environment: Match.arrayWith([
            { Name: 'TEMPORAL_ADDRESS', Value: 'my-ns.a1b2c.tmprl.cloud:7233' },
            { Name: 'TEMPORAL_NAMESPACE', Value: 'my-ns.a1b2c' },
            Match.objectLike({ Name: 'STARRY_ALERT_TOPIC_ARN' }),
            { Name: 'STARRY_STORE_BUCKET', Value: { Ref: Match.stringLikeRegexp('^Transcripts') } },
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
      ],
    });
  });

  it('set only variables the worker reads (workers/env.ts)', () => {
    const [def] = Object.values(template.findResources('AWS::ECS::TaskDefinition')) as Array<{
      Properties: { ContainerDefinitions: Array<{ Environment: { Name: string }[]; Secrets: { Name: string }[] }> };
    }>;
    const names = def!.Properties.ContainerDefinitions.flatMap((c) =>
      [...c.Environment, ...c.Secrets].map((v) => v.Name),
    );
    expect(names.length).toBeGreaterThan(3);
    expect(names.filter((n) => !(n in WorkerEnvSchema.shape))).toEqual([]);
  });

  it('run each worker version as its own service, named by its build id: the new one makes itself current, a draining one keeps its pinned tasks until it is dropped', () => {
    const { template: t } = synth({
      drainingWorkers: [{ buildId: '0.1.0-aaaaaaaaaaaa', image: 'public.ecr.aws/example/openstarry:0' }],
    });
    const services = t.findResources('AWS::ECS::Service');
    expect(Object.keys(services).map((id) => id.replace(/[0-9A-F]{8}$/, ''))).toEqual([
      'Workers010aaaaaaaaaaaaService',
      'Workers010bbbbbbbbbbbbService',
    ]);
    const defs = Object.values(t.findResources('AWS::ECS::TaskDefinition')) as Array<{
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
    // The new version's service waits for the draining one, whose workers run its old agents' last turn.
    const newest = Object.entries(services).find(([id]) => id.startsWith('Workers010bbbbbbbbbbbb'))?.[1] as {
      DependsOn?: string[];
    };
    expect(newest.DependsOn).toEqual(expect.arrayContaining([expect.stringMatching(/^Workers010aaaaaaaaaaaa/)]));
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

  it('may publish to the alert topic and read and write the transcript bucket, nothing else (no delete); the task role has no other policy', () => {
    const policies = template.findResources('AWS::IAM::Policy');
    const taskRolePolicies = Object.values(policies).filter((p) => JSON.stringify(p).includes('WorkerTaskRole'));
    expect(taskRolePolicies).toHaveLength(1);
    const bucketArn = { 'Fn::GetAtt': [expect.stringMatching(/^Transcripts/), 'Arn'] };
    const objects = { 'Fn::Join': ['', [bucketArn, '/*']] };
    const statements = taskRolePolicies[0]?.Properties.PolicyDocument.Statement as {
      Action: string | string[];
      Resource: unknown;
    }[];
    expect(statements).toEqual([
      { Action: 'sns:Publish', Effect: 'Allow', Resource: { Ref: expect.stringMatching(/^Alerts/) } },
      { Action: ['s3:GetObject*', 's3:GetBucket*', 's3:List*'], Effect: 'Allow', Resource: [bucketArn, objects] },
      { Action: expect.arrayContaining(['s3:PutObject']), Effect: 'Allow', Resource: objects },
    ]);
    expect(statements.flatMap((st) => st.Action).filter((a) => /Delete|^s3:\*$/.test(a))).toEqual([]);
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

  it('may read its own secrets, and only those', () => {
    const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p).includes('ApiFunctionServiceRole'),
    );
    const actions = policies.flatMap((p) =>
      (p.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).flatMap((s) => s.Action),
    );
    expect([...new Set(actions)].sort()).toEqual(['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue']);
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

  it('may read the API secrets, and only those; anyone may invoke it through its URL, and no other way', () => {
    const role = (resource(fnId).Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: role }]))
      .flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string[]; Resource: unknown }[]);
    expect(statements).toEqual([
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

describe('cdk-nag (AwsSolutions)', () => {
  it('reports no unacknowledged error or warning', () => {
    const findings = [
      ...Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    expect(findings.map((f) => `${f.id}: ${String(f.entry.data).split(':')[0]}`)).toEqual([]);
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
      ContainerDefinitions: [
        Match.objectLike({
          Secrets: Match.arrayWith([
            Match.objectLike({ Name: 'TEMPORAL_TLS_CERT' }),
            Match.objectLike({ Name: 'TEMPORAL_TLS_KEY' }),
          ]),
        }),
      ],
    });
    expect(Annotations.fromStack(mtls).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'))).toEqual([]);
  });
});
