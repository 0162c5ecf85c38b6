/**
 * The backlog metric Lambda (infra/backlog/handler.ts) driven in-process: each task queue's backlog, as
 * the real dev server reports it (DescribeTaskQueue stats: workflow plus activity tasks, the Worker
 * Deployment Version's too), published to CloudWatch (a local `moto` server speaking its wire protocol)
 * and read back as a scaling policy reads it. A queue that cannot be described publishes nothing.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import {
  CloudWatchClient,
  GetMetricDataCommand,
  ListMetricsCommand,
  type MetricDataResult,
} from '@aws-sdk/client-cloudwatch';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { connectionOptions, temporalEnv } from '../../client/connection';
import { resolveSecretArns, TEMPORAL_SECRET_ARNS } from '../../client/secret-env';
import { freePort } from '../../dev/dev-server';
import { projectRoot } from '../../dev/paths';
import { until } from '../../dev/poll';
import {
  BACKLOG_AGE_METRIC,
  BACKLOG_METRIC,
  describeBacklog,
  handler,
  publishBacklog,
  TASK_QUEUE_DIMENSION,
} from '../../infra/backlog/handler';
import { METRICS_NAMESPACE } from '../../infra/metric-names';
import { expectWarnings } from '../helpers/expected-logs';
import { address, startHarness, uniqueId } from '../helpers/harness';
import { startMoto, type Moto } from '../helpers/moto';

// The workflow-only worker of the activity test says it polls no activity task: that is its purpose.
expectWarnings(/^No activities registered/);

jest.setTimeout(120_000);

let moto: Moto;
let cloudwatch: CloudWatchClient;
let connection: Connection;
let client: Client;
const started: WorkflowHandle[] = [];

/** An AWS SDK client's configuration for the local moto server. */
const awsAtMoto = () => ({
  endpoint: moto.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
});

beforeAll(async () => {
  moto = await startMoto();
  cloudwatch = new CloudWatchClient(awsAtMoto());
  connection = await Connection.connect({ address: address() });
  client = new Client({ connection });
});
afterAll(async () => {
  await Promise.all(started.map((w) => w.terminate('backlog test done').catch(() => undefined)));
  await connection?.close();
  await moto?.stop();
});

/** Start `n` workflows on `taskQueue`: with no worker there, each is one workflow task in its backlog. */
async function startWorkflows(taskQueue: string, n: number, type = 'backlogProbe'): Promise<void> {
  for (let i = 0; i < n; i++)
    started.push(await client.workflow.start(type, { taskQueue, workflowId: uniqueId('backlog-probe') }));
}

/**
 * Wait until Temporal reports `n` tasks in the queue's backlog: the server caches a queue's stats for a
 * few seconds (the Lambda, once a minute, reads a value at most that old).
 */
async function backlogOf(taskQueue: string, n: number): Promise<void> {
  await until(
    `a backlog of ${n} on ${taskQueue}`,
    async () => (await describeBacklog(connection, 'default', taskQueue)).count === n,
    30_000,
    250,
  );
}

/** A CloudWatch namespace of the test's own, so a test reads only what it published. */
const freshNamespace = () => uniqueId('StarryBacklogTest');

/** What CloudWatch holds for a metric of one task queue (the last 10 minutes, per minute, maximum). */
async function readMetric(namespace: string, metric: string, taskQueue: string): Promise<MetricDataResult | undefined> {
  const now = Date.now();
  const out = await cloudwatch.send(
    new GetMetricDataCommand({
      StartTime: new Date(now - 10 * 60_000),
      EndTime: new Date(now + 60_000),
      MetricDataQueries: [
        {
          Id: 'm',
          MetricStat: {
            Metric: {
              Namespace: namespace,
              MetricName: metric,
              Dimensions: [{ Name: TASK_QUEUE_DIMENSION, Value: taskQueue }],
            },
            Period: 60,
            Stat: 'Maximum',
          },
        },
      ],
    }),
  );
  return out.MetricDataResults?.[0];
}

test('workflows waiting on a queue no worker polls are its backlog, published as TaskQueueBacklog with the TaskQueue dimension', async () => {
  const taskQueue = uniqueId('tq-backlog-unpolled');
  await startWorkflows(taskQueue, 3);
  await backlogOf(taskQueue, 3);
  const namespace = freshNamespace();

  const backlogs = await publishBacklog({
    connection,
    namespace: 'default',
    queues: [taskQueue],
    cloudwatch,
    metricsNamespace: namespace,
  });

  expect(backlogs).toEqual([{ taskQueue, count: 3, ageSeconds: expect.any(Number) }]);
  expect((await readMetric(namespace, BACKLOG_METRIC, taskQueue))?.Values).toEqual([3]);
  const age = (await readMetric(namespace, BACKLOG_AGE_METRIC, taskQueue))?.Values ?? [];
  expect(age).toHaveLength(1);
  expect(age[0]).toBeGreaterThan(0);
  const { Metrics } = await cloudwatch.send(new ListMetricsCommand({ Namespace: namespace }));
  expect(Metrics?.map((m) => [m.MetricName, m.Dimensions]).sort()).toEqual([
    [BACKLOG_METRIC, [{ Name: TASK_QUEUE_DIMENSION, Value: taskQueue }]],
    [BACKLOG_AGE_METRIC, [{ Name: TASK_QUEUE_DIMENSION, Value: taskQueue }]],
  ]);
});

test('an empty queue publishes a backlog of 0 and an age of 0, beside a busy one, in one call', async () => {
  const empty = uniqueId('tq-backlog-empty');
  const busy = uniqueId('tq-backlog-busy');
  await startWorkflows(busy, 2);
  await backlogOf(busy, 2);
  const namespace = freshNamespace();

  await publishBacklog({
    connection,
    namespace: 'default',
    queues: [empty, busy],
    cloudwatch,
    metricsNamespace: namespace,
  });

  expect((await readMetric(namespace, BACKLOG_METRIC, empty))?.Values).toEqual([0]);
  expect((await readMetric(namespace, BACKLOG_AGE_METRIC, empty))?.Values).toEqual([0]);
  expect((await readMetric(namespace, BACKLOG_METRIC, busy))?.Values).toEqual([2]);
});

test('activity tasks no worker runs count too: the backlog is workflow plus activity tasks', async () => {
  const taskQueue = uniqueId('tq-backlog-activities');
  // A worker that runs the workflows but registers no activity: each workflow leaves one activity task.
  const native = await NativeConnection.connect({ address: address() });
  const worker = await Worker.create({
    connection: native,
    taskQueue,
    workflowsPath: path.join(__dirname, '../fixtures/backlog-workflows.ts'),
  });
  const running = worker.run();
  try {
    await startWorkflows(taskQueue, 2, 'waitsOnActivity');
    await backlogOf(taskQueue, 2);
    // And two more workflow tasks once the worker is gone: 2 activity + 2 workflow tasks.
    worker.shutdown();
    await running;
    await startWorkflows(taskQueue, 2, 'waitsOnActivity');
    await backlogOf(taskQueue, 4);
    const namespace = freshNamespace();

    await publishBacklog({
      connection,
      namespace: 'default',
      queues: [taskQueue],
      cloudwatch,
      metricsNamespace: namespace,
    });

    expect((await readMetric(namespace, BACKLOG_METRIC, taskQueue))?.Values).toEqual([4]);
  } finally {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.catch(() => undefined);
    await native.close();
  }
});

test("a queue routed to a Worker Deployment Version counts the version's backlog", async () => {
  // The harness's worker is versioned and takes its deployment over: the queue joins the current version.
  const h = await startHarness({ name: 'backlog-versioned' });
  try {
    await until('the queue routed to the current version', async () => {
      const r = await connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: h.taskQueue, kind: 1 },
        taskQueueType: 1,
      });
      return Boolean(r.versioningInfo?.currentDeploymentVersion?.buildId);
    });
  } finally {
    await h.stop();
  }
  await startWorkflows(h.taskQueue, 4);
  await backlogOf(h.taskQueue, 4);
  const namespace = freshNamespace();

  await publishBacklog({
    connection,
    namespace: 'default',
    queues: [h.taskQueue],
    cloudwatch,
    metricsNamespace: namespace,
  });

  expect((await readMetric(namespace, BACKLOG_METRIC, h.taskQueue))?.Values).toEqual([4]);
});

test('a queue that cannot be described fails the run with its name and publishes nothing, not a 0', async () => {
  const taskQueue = uniqueId('tq-backlog-fine');
  const namespace = freshNamespace();

  await expect(
    publishBacklog({
      connection,
      namespace: 'no-such-namespace',
      queues: [taskQueue],
      cloudwatch,
      metricsNamespace: namespace,
    }),
  ).rejects.toThrow(`cannot describe task queue ${taskQueue} (namespace no-such-namespace)`);

  const { Metrics } = await cloudwatch.send(new ListMetricsCommand({ Namespace: namespace }));
  expect(Metrics ?? []).toEqual([]);
});

test('the Lambda entry reads its environment: an unreachable Temporal fails the invocation, then a reachable one publishes under the default namespace', async () => {
  const taskQueue = uniqueId('tq-backlog-lambda');
  await startWorkflows(taskQueue, 1);
  await backlogOf(taskQueue, 1);
  const temporal = address();
  const saved = { ...process.env };
  try {
    Object.assign(process.env, moto.env, { STARRY_BACKLOG_QUEUES: ` ${taskQueue}, ` });
    delete process.env.STARRY_METRICS_NAMESPACE;
    const closed = `127.0.0.1:${await freePort()}`;
    process.env.TEMPORAL_ADDRESS = closed;
    await expect(handler()).rejects.toThrow(`cannot reach Temporal at ${closed}`);

    process.env.TEMPORAL_ADDRESS = temporal;
    await expect(handler()).resolves.toEqual({ backlogs: [{ taskQueue, count: 1, ageSeconds: expect.any(Number) }] });
  } finally {
    process.env = saved;
  }
  expect((await readMetric(METRICS_NAMESPACE, BACKLOG_METRIC, taskQueue))?.Values).toEqual([1]);
});

test("the Lambda's Temporal credentials come from Secrets Manager ARNs: an API key, or an mTLS certificate and key", async () => {
  const sm = new SecretsManagerClient(awsAtMoto());
  const secret = async (value: string) =>
    (await sm.send(new CreateSecretCommand({ Name: uniqueId('starry-backlog'), SecretString: value }))).ARN as string;
  const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const key = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';

  const apiKey = await resolveSecretArns(
    { TEMPORAL_API_KEY_SECRET_ARN: await secret('tmprl-key') },
    TEMPORAL_SECRET_ARNS,
    sm,
  );
  const mtls = await resolveSecretArns(
    { TEMPORAL_TLS_CERT_SECRET_ARN: await secret(cert), TEMPORAL_TLS_KEY_SECRET_ARN: await secret(key) },
    TEMPORAL_SECRET_ARNS,
    sm,
  );

  expect(apiKey.read).toBe(1);
  expect(connectionOptions(temporalEnv(apiKey.env))).toMatchObject({ apiKey: 'tmprl-key', tls: true });
  expect(mtls.read).toBe(2);
  expect(connectionOptions(temporalEnv(mtls.env)).tls).toEqual({
    clientCertPair: { crt: Buffer.from(cert), key: Buffer.from(key) },
  });
});

test('the Lambda bundle stays small: its module graph has no native worker and no aws-cdk-lib', () => {
  // lib/ is what `npm run build` made of infra/backlog/handler.ts (the bundle's entry).
  const script = `require(${JSON.stringify(path.join(projectRoot(), 'lib/infra/backlog/handler.js'))}); process.stdout.write(JSON.stringify(Object.keys(require.cache)))`;
  const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as string[];
  expect(loaded.some((f) => f.includes('/@temporalio/client/'))).toBe(true);
  expect(loaded.some((f) => f.includes('/@aws-sdk/client-cloudwatch/'))).toBe(true);
  expect(
    loaded.filter((f) => /\/(@temporalio\/(worker|core-bridge)|aws-cdk-lib|cdk-nag|constructs)\//.test(f)),
  ).toEqual([]);
});
