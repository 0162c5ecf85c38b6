/**
 * The backlog metric: a Lambda an EventBridge schedule invokes every minute, which asks Temporal how many
 * tasks wait on each worker task queue (DescribeTaskQueue with `reportStats`, workflow and activity
 * tasks) and publishes that as CloudWatch metrics the worker services scale on. CPU says little about
 * agents that mostly wait on LLM calls; a growing backlog says the workers are too few.
 *
 * Environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, Temporal credentials as the API Lambda takes them
 * (TEMPORAL_API_KEY_SECRET_ARN, or TEMPORAL_TLS_CERT_SECRET_ARN and TEMPORAL_TLS_KEY_SECRET_ARN),
 * STARRY_BACKLOG_QUEUES (comma-separated task queue names), STARRY_METRICS_NAMESPACE (default OpenStarry).
 * A queue that cannot be described, or Temporal out of reach, fails the invocation: a missing data point
 * is honest, a made-up 0 would scale the workers in.
 */
import { CloudWatchClient, type MetricDatum, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import type { Connection } from '@temporalio/client';
import { connectClient, temporalEnv } from '../../client/connection';
import { resolveSecretArns, TEMPORAL_SECRET_ARNS } from '../../client/secret-env';
import { BACKLOG_AGE_METRIC, BACKLOG_METRIC, METRICS_NAMESPACE, TASK_QUEUE_DIMENSION } from '../metric-names';

export { BACKLOG_AGE_METRIC, BACKLOG_METRIC, TASK_QUEUE_DIMENSION } from '../metric-names';

/** What `publishBacklog` works with: real clients, so a test drives it against a dev server and moto. */
export interface BacklogDeps {
  connection: Pick<Connection, 'workflowService'>;
  namespace: string;
  /** Task queue names (the main queue and, when split, the tool queue). */
  queues: readonly string[];
  cloudwatch: CloudWatchClient;
  /** CloudWatch namespace; default METRICS_NAMESPACE. */
  metricsNamespace?: string;
}

/** One task queue's backlog: workflow plus activity tasks, and the age of the oldest one. */
export interface QueueBacklog {
  taskQueue: string;
  count: number;
  /** Seconds; 0 with an empty backlog; undefined when the server reports no age for a non-empty one. */
  ageSeconds?: number;
}

// temporal.api.enums.v1.TaskQueueType / TaskQueueKind
const WORKFLOW = 1;
const ACTIVITY = 2;
const KIND_NORMAL = 1;

type Int64 = number | { toNumber(): number } | null | undefined;
const num = (v: Int64): number => (v == null ? 0 : typeof v === 'number' ? v : v.toNumber());

/**
 * The backlog of one task queue. `stats` of DescribeTaskQueue covers every Worker Deployment Version
 * polling the queue (and unversioned workers); sticky workflow tasks are not counted (Temporal: they
 * live a few seconds). A server that returns no stats is an error, not an empty queue.
 *
 * ```ts
 * const { count } = await describeBacklog(connection, 'default', 'openstarry');
 * ```
 */
export async function describeBacklog(
  connection: Pick<Connection, 'workflowService'>,
  namespace: string,
  taskQueue: string,
): Promise<QueueBacklog> {
  const types = await Promise.all(
    [WORKFLOW, ACTIVITY].map(async (taskQueueType) => {
      let res;
      try {
        res = await connection.workflowService.describeTaskQueue({
          namespace,
          taskQueue: { name: taskQueue, kind: KIND_NORMAL },
          taskQueueType,
          reportStats: true,
        });
      } catch (err) {
        throw new Error(
          `cannot describe task queue ${taskQueue} (namespace ${namespace}): ${(err as Error).message}. Check TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, the credentials and STARRY_BACKLOG_QUEUES.`,
        );
      }
      if (!res.stats)
        throw new Error(
          `Temporal returned no stats for task queue ${taskQueue} (namespace ${namespace}): the server does not report task queue stats (DescribeTaskQueue reportStats): upgrade it, or scale on CPU alone`,
        );
      return res.stats;
    }),
  );
  const count = types.reduce((sum, s) => sum + num(s.approximateBacklogCount), 0);
  const ages = types
    .filter((s) => num(s.approximateBacklogCount) > 0 && s.approximateBacklogAge)
    .map((s) => num(s.approximateBacklogAge?.seconds) + (s.approximateBacklogAge?.nanos ?? 0) / 1e9);
  const ageSeconds = count === 0 ? 0 : ages.length ? Math.max(...ages) : undefined;
  return { taskQueue, count, ...(ageSeconds !== undefined ? { ageSeconds } : {}) };
}

/**
 * Describe every queue, then publish all of them in one PutMetricData: `TaskQueueBacklog` (Count) and
 * `TaskQueueBacklogAge` (Seconds), dimension `TaskQueue=<name>`. Nothing is published if any queue
 * fails.
 *
 * ```ts
 * const backlogs = await publishBacklog({ connection, namespace: 'default', queues: ['openstarry'], cloudwatch: new CloudWatchClient({}) });
 * ```
 */
export async function publishBacklog(deps: BacklogDeps): Promise<QueueBacklog[]> {
  if (deps.queues.length === 0) throw new Error('no task queue to describe: set STARRY_BACKLOG_QUEUES');
  const backlogs = await Promise.all(deps.queues.map((q) => describeBacklog(deps.connection, deps.namespace, q)));
  const timestamp = new Date();
  const data: MetricDatum[] = backlogs.flatMap((b) => {
    const Dimensions = [{ Name: TASK_QUEUE_DIMENSION, Value: b.taskQueue }];
    return [
      { MetricName: BACKLOG_METRIC, Dimensions, Unit: 'Count', Value: b.count, Timestamp: timestamp },
      ...(b.ageSeconds !== undefined
        ? [
            {
              MetricName: BACKLOG_AGE_METRIC,
              Dimensions,
              Unit: 'Seconds' as const,
              Value: b.ageSeconds,
              Timestamp: timestamp,
            },
          ]
        : []),
    ];
  });
  await deps.cloudwatch.send(
    new PutMetricDataCommand({ Namespace: deps.metricsNamespace ?? METRICS_NAMESPACE, MetricData: data }),
  );
  return backlogs;
}

/** STARRY_BACKLOG_QUEUES as names: trimmed, empty entries dropped, duplicates once. */
export function backlogQueues(value: string | undefined): string[] {
  const queues = [
    ...new Set(
      (value ?? '')
        .split(',')
        .map((q) => q.trim())
        .filter(Boolean),
    ),
  ];
  if (queues.length === 0)
    throw new Error(
      'STARRY_BACKLOG_QUEUES is empty: set it to the worker task queues, comma-separated (e.g. "openstarry,openstarry-tools")',
    );
  return queues;
}

let ready: Promise<Omit<BacklogDeps, 'connection'> & { connection: Connection }> | undefined;

/** The container's clients, made on the first invocation and reused (a failure is retried by the next). */
function containerDeps(env: NodeJS.ProcessEnv): Promise<Omit<BacklogDeps, 'connection'> & { connection: Connection }> {
  ready ??= (async () => {
    const queues = backlogQueues(env.STARRY_BACKLOG_QUEUES);
    const { env: resolved } = await resolveSecretArns(env, TEMPORAL_SECRET_ARNS);
    const t = temporalEnv(resolved);
    const connection = await connectClient(t);
    return {
      connection,
      namespace: t.namespace,
      queues,
      cloudwatch: new CloudWatchClient({}),
      ...(env.STARRY_METRICS_NAMESPACE ? { metricsNamespace: env.STARRY_METRICS_NAMESPACE } : {}),
    };
  })().catch((err) => {
    ready = undefined;
    throw err;
  });
  return ready;
}

/**
 * The Lambda entry (EventBridge schedule, every minute). Throws when a queue cannot be described, so the
 * invocation counts as an error (the function's Errors metric) and no data point is published.
 *
 * ```ts
 * // infra/backlog-metric.ts: new NodejsFunction(this.stack, 'BacklogFunction', { entry: 'infra/backlog/handler.ts', handler: 'handler' })
 * ```
 */
export async function handler(): Promise<{ backlogs: QueueBacklog[] }> {
  const deps = await containerDeps(process.env);
  return { backlogs: await publishBacklog(deps) };
}
