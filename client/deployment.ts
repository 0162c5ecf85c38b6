/**
 * A Worker Deployment as the server sees it, and its routing changed (docs/ARCHITECTURE.md#rolling-out-a-new-build):
 * `starry versions` and `starry promote` read and act through here.
 */
import type { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import {
  ROLLOUT_WORKFLOW_TYPES,
  versionQuery,
  versionStatus,
  type RolloutWorkflowType,
  type VersionRow,
} from '../core/rollout';
import { isLivePoller } from './connection';

type Service = Pick<Connection, 'workflowService'>;
const WORKFLOW_QUEUE = temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW;
const IDENTITY = 'starry promote';

/** The deployment's description, or undefined when no worker of it ever polled (NOT_FOUND). */
export async function describeDeployment(connection: Service, namespace: string, deploymentName: string) {
  try {
    return (await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName }))
      .workerDeploymentInfo;
  } catch (err) {
    if ((err as { code?: number }).code === 5) return undefined;
    throw err;
  }
}

/**
 * Every version of the deployment, newest first: its status, its live pollers (on its workflow task
 * queues, counted by the poller's own build id) and its open workflows by type (visibility, which lags the
 * histories by a moment).
 */
export async function listVersions(client: Client, namespace: string, deploymentName: string): Promise<VersionRow[]> {
  const info = await describeDeployment(client.connection, namespace, deploymentName);
  const ramp = info?.routingConfig?.rampingVersionPercentage ?? 0;
  const rows = await Promise.all(
    (info?.versionSummaries ?? []).map(async (s): Promise<VersionRow> => {
      const buildId = s.deploymentVersion?.buildId ?? '';
      const status = versionStatus(s.status);
      const created = s.createTime?.seconds;
      return {
        buildId,
        status,
        ...(status === 'ramping' ? { rampPercentage: ramp } : {}),
        pollers: await pollersOf(client.connection, namespace, { deploymentName, buildId }),
        open: await openByType(client, deploymentName, buildId),
        ...(created ? { createdAt: new Date(Number(created) * 1000).toISOString() } : {}),
      };
    }),
  );
  return rows.sort((a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? ''));
}

/** The workers of `version` that poll its workflow task queues now (as `hasLiveWorker` judges a poller). */
async function pollersOf(
  connection: Service,
  namespace: string,
  version: { deploymentName: string; buildId: string },
): Promise<number> {
  const { workerDeploymentVersionInfo: info } = await connection.workflowService.describeWorkerDeploymentVersion({
    namespace,
    deploymentVersion: version,
  });
  const identities = new Set<string>();
  for (const q of (info?.taskQueueInfos ?? []).filter((t) => t.type === WORKFLOW_QUEUE)) {
    const { pollers } = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: q.name ?? '', kind: 1 },
      taskQueueType: WORKFLOW_QUEUE,
    });
    for (const p of pollers ?? [])
      if (p.deploymentOptions?.buildId === version.buildId && isLivePoller(p)) identities.add(p.identity ?? '');
  }
  return identities.size;
}

async function openByType(
  client: Client,
  deploymentName: string,
  buildId: string,
): Promise<Record<RolloutWorkflowType, number>> {
  const counts = await Promise.all(
    ROLLOUT_WORKFLOW_TYPES.map(
      async (type) => (await client.workflow.count(versionQuery(deploymentName, buildId, type, true))).count,
    ),
  );
  return Object.fromEntries(ROLLOUT_WORKFLOW_TYPES.map((t, i) => [t, counts[i] ?? 0])) as Record<
    RolloutWorkflowType,
    number
  >;
}

/** A run to replay: the workflow id and the run id, newest first within its type. */
export interface RunRef {
  workflowId: string;
  runId: string;
  type: RolloutWorkflowType;
}

/**
 * The `n` most recent runs of each workflow type on a version (open ones and closed ones, by start
 * time), the histories the replay gate replays.
 */
export async function recentRuns(
  client: Client,
  deploymentName: string,
  buildId: string,
  n: number,
): Promise<RunRef[]> {
  const runs: RunRef[] = [];
  for (const type of ROLLOUT_WORKFLOW_TYPES) {
    const found: (RunRef & { start: number })[] = [];
    // Visibility lists open runs first; read a bounded window and keep the newest n by start time.
    for await (const w of client.workflow.list({ query: versionQuery(deploymentName, buildId, type, false) })) {
      found.push({ workflowId: w.workflowId, runId: w.runId, type, start: w.startTime.getTime() });
      if (found.length >= n * 4) break;
    }
    found.sort((a, b) => b.start - a.start);
    runs.push(...found.slice(0, n).map(({ workflowId, runId }) => ({ workflowId, runId, type })));
  }
  return runs;
}

/** The current version's build id, if the deployment has one. */
export async function currentBuild(connection: Service, namespace: string, deploymentName: string) {
  const info = await describeDeployment(connection, namespace, deploymentName);
  return info?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
}

/**
 * The deployment's routing as it stands, as a token: a `route` given it changes nothing if the routing
 * changed since (another operator's promotion while the gate ran).
 */
export async function routingToken(connection: Service, namespace: string, deploymentName: string) {
  try {
    return (await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName })).conflictToken;
  } catch (err) {
    if ((err as { code?: number }).code === 5) return undefined;
    throw err;
  }
}

/**
 * Make `buildId` the deployment's current version, or its ramping one at `ramp` percent, if the routing
 * is still the one `conflictToken` was read from.
 */
export async function route(
  connection: Service,
  namespace: string,
  deploymentName: string,
  buildId: string,
  { ramp, conflictToken }: { ramp?: number; conflictToken?: Uint8Array | undefined } = {},
): Promise<void> {
  const common = {
    namespace,
    deploymentName,
    buildId,
    identity: IDENTITY,
    ignoreMissingTaskQueues: true,
    ...(conflictToken?.length ? { conflictToken } : {}),
  };
  if (ramp === undefined) await connection.workflowService.setWorkerDeploymentCurrentVersion(common);
  else await connection.workflowService.setWorkerDeploymentRampingVersion({ ...common, percentage: ramp });
}
