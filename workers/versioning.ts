/**
 * Worker Deployment Versioning (docs/ARCHITECTURE.md#versioning): every worker runs as one version of
 * the deployment `openstarry`, its build id the package version and the workflow bundle's hash, so
 * any change to workflow code is a new version. A task stays on the version it started on (PINNED); an
 * agent moves to the current version at its continue-as-new. A version gets new work only once it is
 * the deployment's current version: `makeCurrent` says which worker makes it so.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import { describeDeployment } from '../client/deployment';
import { projectRoot } from '../dev/paths';
import { newVersionSignal } from '../workflows/messages';

/** The Worker Deployment every OpenStarry worker belongs to, unless its options name another. */
export const DEPLOYMENT_NAME = 'openstarry';

/**
 * Who makes a worker's version the deployment's current one, once the worker polls:
 * - `if-none`: only when the deployment has none yet (a first deploy). Later versions wait for a human
 *   or a deploy step (`starry worker --set-current`, or `temporal worker deployment set-current-version`).
 * - `always`: this worker makes its version current, then wakes the agents of other versions so that an
 *   idle one moves over too. Give it to the workers of the version that is to take over only: a worker
 *   of another version started with it takes the deployment back to that version.
 * - `take-over`: as `always`, and every open workflow of an older version is sent to this one for its
 *   next workflow task (a one-time override), where it replays on this code: a developer's machine runs
 *   one build at a time, and a workflow left on a build nobody runs would wait forever.
 */
export type MakeCurrent = 'if-none' | 'always' | 'take-over';

/** How a worker joins its deployment; every field optional. */
export interface VersioningOptions {
  /** The deployment's name; default `openstarry`. */
  deploymentName?: string;
  /** The build id; default `<package version>-<12 hex of the bundle's SHA-256>`. */
  buildId?: string;
  /** Who makes this version current (see `MakeCurrent`); default `if-none`. */
  makeCurrent?: MakeCurrent;
}

/**
 * The build id of a workflow bundle: the package version and the hash of the bundle's code, so two
 * workers share a version exactly when they run the same workflow code, in any directory and on any
 * machine. The inline source map is left out: it names the sources by their absolute paths (and holds
 * their comments), which change with the checkout, not the code.
 *
 * ```ts
 * buildIdOf(readFileSync('lib/workflow-bundle.js', 'utf8')) // '0.1.0-3f9a0c1b2d4e'
 * ```
 */
export function buildIdOf(bundleCode: string, packageVersion = PACKAGE_VERSION): string {
  const map = bundleCode.lastIndexOf('\n//# sourceMappingURL=');
  const code = canonicalModules(map < 0 ? bundleCode : bundleCode.slice(0, map));
  return `${packageVersion}-${createHash('sha256').update(code).digest('hex').slice(0, 12)}`;
}

/**
 * The bundle with its module table in one order. Webpack lists the same modules in an order that
 * depends on where the checkout lies (measured: two modules swapped between a checkout and a copy of it),
 * while the runtime looks modules up by id: the order is not the code.
 */
function canonicalModules(code: string): string {
  const start = code.indexOf('var __webpack_modules__ = ({');
  const end = start < 0 ? -1 : code.indexOf('\n/******/ \t});', start);
  if (end < 0) return code;
  const [head, ...modules] = code.slice(start, end).split(/\n(?=\n\/\*\*\*\/ ")/);
  return [code.slice(0, start), head, ...modules.map((m) => m.trim()).sort(), code.slice(end)].join('\n');
}

const PACKAGE_VERSION = (
  JSON.parse(readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { version: string }
).version;

/** `deploymentName:buildId`, as the `TemporalWorkerDeploymentVersion` search attribute holds it. */
const versionKey = (v: WorkerDeploymentVersion) => `${v.deploymentName}:${v.buildId}`;

interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

/**
 * Wait until the server lists `version` (its worker polls), then make it current as `mode` says.
 * Returns what it did, for the worker's log.
 *
 * ```ts
 * await makeVersionCurrent(connection, 'default', { deploymentName: 'openstarry', buildId }, 'always');
 * ```
 */
export async function makeVersionCurrent(
  connection: NativeConnection,
  namespace: string,
  version: WorkerDeploymentVersion,
  mode: MakeCurrent,
  log: Logger = { info: () => undefined, warn: () => undefined },
  /** Whether to keep waiting for the server to list the version (false once the worker stopped). */
  polling: () => boolean = () => true,
  timeoutMs = 60_000,
): Promise<'current' | 'made current' | 'waits' | 'stopped'> {
  const service = connection.workflowService;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!polling()) return 'stopped';
    const info = await describeDeployment(connection, namespace, version.deploymentName);
    const mine = info?.versionSummaries?.find((s) => s.deploymentVersion?.buildId === version.buildId);
    if (mine) {
      const current = info?.routingConfig?.currentDeploymentVersion;
      if (current?.buildId === version.buildId) return 'current';
      if (current?.buildId && mode === 'if-none') {
        log.warn(
          `worker version ${version.buildId} is not the current version of deployment ${version.deploymentName} (${current.buildId} is) and gets no new work until it is: \`starry worker --set-current\` or \`temporal worker deployment set-current-version --deployment-name ${version.deploymentName} --build-id ${version.buildId}\``,
        );
        return 'waits';
      }
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        identity: 'openstarry worker',
        ignoreMissingTaskQueues: true,
      });
      log.info(`worker version ${version.buildId} is now the current version of deployment ${version.deploymentName}`);
      if (current?.buildId) {
        // A workflow learns that its target changed from its task queue: wake the agents once every queue knows.
        await routed(connection, namespace, version, deadline);
        await moveOver(connection, namespace, version, mode === 'take-over', log);
      }
      return 'made current';
    }
    if (Date.now() > deadline)
      throw new Error(
        `the server did not list worker version ${versionKey(version)} within ${timeoutMs / 1000} s of the worker's start`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * After `version` became current by a deploy step (`starry promote`): once its task queues route to it,
 * wake the agents of older versions so that an idle one moves over at once.
 */
export async function wakeOlderAgents(
  connection: Service,
  namespace: string,
  version: WorkerDeploymentVersion,
  log: Logger,
  timeoutMs = 60_000,
): Promise<void> {
  await routed(connection, namespace, version, Date.now() + timeoutMs);
  await moveOver(connection, namespace, version, false, log);
}

/** What these calls need of a connection, a worker's or a client's. */
type Service = Pick<NativeConnection, 'workflowService'>;

/** Wait until every workflow task queue of `version` routes new work to it (the server updates them one by one). */
async function routed(
  connection: Service,
  namespace: string,
  version: WorkerDeploymentVersion,
  deadline: number,
): Promise<void> {
  const service = connection.workflowService;
  const { workerDeploymentVersionInfo: info } = await service.describeWorkerDeploymentVersion({
    namespace,
    deploymentVersion: version,
  });
  const WORKFLOW = 1; // temporal.api.enums.v1.TaskQueueType
  for (const { name } of (info?.taskQueueInfos ?? []).filter((q) => q.type === WORKFLOW)) {
    for (;;) {
      const { versioningInfo } = await service.describeTaskQueue({
        namespace,
        taskQueue: { name },
        taskQueueType: WORKFLOW,
      });
      if (versioningInfo?.currentDeploymentVersion?.buildId === version.buildId || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * After a new version became current: wake the agents of older versions (an idle agent moves at the
 * continue-as-new its wake-up triggers), or, taking over, send every open workflow of an older version
 * to this one for its next workflow task. One batch operation on the server, which goes on without us.
 */
async function moveOver(
  connection: Service,
  namespace: string,
  version: WorkerDeploymentVersion,
  takeOver: boolean,
  log: Logger,
): Promise<void> {
  const query = [
    takeOver ? `WorkflowType IN ('agentWorkflow', 'taskWorkflow')` : `WorkflowType = 'agentWorkflow'`,
    `ExecutionStatus = 'Running'`,
    `TemporalWorkerDeployment = '${version.deploymentName}'`,
    `TemporalWorkerDeploymentVersion != '${versionKey(version)}'`,
  ].join(' AND ');
  const identity = 'openstarry worker';
  try {
    await connection.workflowService.startBatchOperation({
      namespace,
      jobId: `openstarry-${takeOver ? 'take-over' : 'wake'}-${version.buildId}-${Date.now()}`,
      reason: `worker version ${version.buildId} is current`,
      visibilityQuery: query,
      ...(takeOver
        ? {
            updateWorkflowOptionsOperation: {
              identity,
              workflowExecutionOptions: { versioningOverride: { oneTime: { targetDeploymentVersion: version } } },
              updateMask: { paths: ['versioning_override'] },
            },
          }
        : { signalOperation: { signal: newVersionSignal.name, identity } }),
    });
  } catch (err) {
    log.warn(
      `could not ${takeOver ? 'move the workflows of older versions' : 'wake the agents of older versions'} (${(err as Error).message}): they move at their next message or continue-as-new`,
    );
  }
}
