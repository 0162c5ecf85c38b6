/**
 * Rolling out a new build (docs/ARCHITECTURE.md#rolling-out-a-new-build): what `starry versions` shows of a
 * deployment's versions and what `starry promote` decides before it changes the routing. Plain data in,
 * plain data or a refusal out; client/deployment.ts asks the server, cli/commands/rollout.ts speaks.
 */

/** The workflow types a version runs, each pinned to it until it ends or continues as new. */
export const ROLLOUT_WORKFLOW_TYPES = ['agentWorkflow', 'taskWorkflow', 'budgetWorkflow'] as const;
export type RolloutWorkflowType = (typeof ROLLOUT_WORKFLOW_TYPES)[number];

/** A version's place in the routing, as Temporal names it (`WorkerDeploymentVersionStatus`). */
export type VersionStatus = 'current' | 'ramping' | 'draining' | 'drained' | 'inactive' | 'created' | 'unknown';

const STATUS_BY_NUMBER: Record<number, VersionStatus> = {
  1: 'inactive',
  2: 'current',
  3: 'ramping',
  4: 'draining',
  5: 'drained',
  6: 'created',
};

/** The status of a version from the proto enum, a number from the server or its name from JSON. */
export function versionStatus(value: unknown): VersionStatus {
  if (typeof value === 'number') return STATUS_BY_NUMBER[value] ?? 'unknown';
  const name = String(value ?? '')
    .replace('WORKER_DEPLOYMENT_VERSION_STATUS_', '')
    .toLowerCase();
  return (Object.values(STATUS_BY_NUMBER) as string[]).includes(name) ? (name as VersionStatus) : 'unknown';
}

/** One version of the deployment: where it stands, who serves it and what still runs on it. */
export interface VersionRow {
  buildId: string;
  status: VersionStatus;
  /** The share of new work it gets while ramping, 0 to 100. */
  rampPercentage?: number;
  /** Workers of this version polling its task queues now. */
  pollers: number;
  /** Open workflows pinned to it, by type. */
  open: Record<RolloutWorkflowType, number>;
  createdAt?: string;
}

/**
 * The visibility query for the workflows of one version (`TemporalWorkerDeploymentVersion` holds
 * `deployment:buildId`), of one type, open ones only when `running`.
 */
export function versionQuery(deployment: string, buildId: string, type: RolloutWorkflowType, running: boolean): string {
  const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return [
    `TemporalWorkerDeploymentVersion = ${quote(`${deployment}:${buildId}`)}`,
    `WorkflowType = ${quote(type)}`,
    ...(running ? [`ExecutionStatus = 'Running'`] : []),
  ].join(' AND ');
}

/** `--ramp PCT`: a number from 0 to 100, or a message that says what was wrong. */
export function parseRamp(text: string): number | { error: string } {
  const n = /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : NaN;
  if (!Number.isFinite(n) || n < 0 || n > 100)
    return {
      error: `--ramp must be a percentage from 0 to 100 (the share of new agents and tasks the version gets); got "${text}". To send it all new work, promote without --ramp`,
    };
  return n;
}

/** `--recent N`: a whole number from 1 to 1000. */
export function parseRecent(text: string): number | { error: string } {
  const n = /^\d+$/.test(text.trim()) ? Number(text) : NaN;
  if (!(n >= 1 && n <= 1000))
    return { error: `--recent must be a whole number from 1 to 1000 (histories of each workflow type); got "${text}"` };
  return n;
}

/** What `starry promote` was asked to do. */
export interface PromoteAsk {
  deployment: string;
  /** The build to promote; none: this checkout's build. */
  buildId?: string;
  /** This checkout's build, whose code the gate replays the histories against. */
  localBuildId: string;
  ramp?: number;
}

/**
 * Whether the promotion may go on to its gate, decided from the deployment as the server describes it:
 * the target is a version the server knows, is this checkout's build (the gate replays against the code
 * at hand, so it can vouch for no other), is not current already, and has workers polling (routing work to
 * a version nobody serves would leave every new agent and task waiting).
 */
export function checkPromotion(
  ask: PromoteAsk,
  versions: VersionRow[],
): { ok: true; target: VersionRow; current?: VersionRow } | { ok: false; reason: string } {
  const buildId = ask.buildId ?? ask.localBuildId;
  const target = versions.find((v) => v.buildId === buildId);
  const known = versions.map((v) => v.buildId).join(', ') || 'none';
  if (!target)
    return {
      ok: false,
      reason: `deployment ${ask.deployment} has no version ${buildId} (its versions: ${known}): a version appears once one of its workers polls; start the new build's workers (\`starry worker\`) and check \`starry versions\``,
    };
  if (buildId !== ask.localBuildId)
    return {
      ok: false,
      reason: `${buildId} is not this checkout's build (${ask.localBuildId}): the replay gate runs the histories on the code of the build it promotes. Run \`starry promote\` where ${buildId} was built, or give its bundle with --bundle <its lib/workflow-bundle.js>`,
    };
  const current = versions.find((v) => v.status === 'current');
  if (current?.buildId === buildId && ask.ramp === undefined)
    return { ok: false, reason: `${buildId} is already the current version of deployment ${ask.deployment}` };
  if (current?.buildId === buildId)
    return {
      ok: false,
      reason: `${buildId} is the current version of deployment ${ask.deployment}: only another version can ramp`,
    };
  if (target.pollers === 0)
    return {
      ok: false,
      reason: `version ${buildId} has no worker polling: no new agent or task would run. Start its workers (\`starry worker\` from that build), wait until \`starry versions\` shows pollers, then promote`,
    };
  return current ? { ok: true, target, current } : { ok: true, target };
}

/**
 * `starry versions` as a table: newest version first, what routes to it, who serves it and what still
 * runs there. A draining version with nothing open and no pollers needed is ready to stop.
 */
export function formatVersions(deployment: string, rows: VersionRow[]): string {
  if (!rows.length)
    return `deployment ${deployment} has no versions yet: a version appears once one of its workers polls (\`starry worker\`)\n`;
  const head = ['BUILD ID', 'STATUS', 'POLLERS', 'AGENTS', 'TASKS', 'BUDGETS'];
  const lines = rows.map((r) => [
    r.buildId,
    r.status === 'ramping' ? `ramping ${r.rampPercentage ?? 0}%` : r.status,
    String(r.pollers),
    String(r.open.agentWorkflow),
    String(r.open.taskWorkflow),
    String(r.open.budgetWorkflow),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const row = (cells: string[]) => `${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ')}`.trimEnd();
  const idle = rows.filter(
    (r) => r.status !== 'current' && r.status !== 'ramping' && openCount(r) === 0 && r.pollers > 0,
  );
  const note = idle.length
    ? `\nnothing runs on ${idle.map((r) => r.buildId).join(', ')}: ${idle.length === 1 ? 'its' : 'their'} workers may stop\n`
    : '';
  return `deployment ${deployment} (AGENTS, TASKS, BUDGETS: open workflows pinned to the version)\n${[head, ...lines].map(row).join('\n')}\n${note}`;
}

/** Open workflows pinned to a version. */
export const openCount = (r: VersionRow): number => r.open.agentWorkflow + r.open.taskWorkflow + r.open.budgetWorkflow;

/** A history the gate could not replay: its workflow, its run and the first event that no longer matches. */
export interface GateFailure {
  workflowId: string;
  runId?: string;
  firstBadEvent?: { eventId: number; eventType: string };
}

/** Why the gate refused a promotion, naming each history and event, and what to do. */
export function gateRefusal(buildId: string, currentBuildId: string, bad: GateFailure[]): string {
  const which = bad
    .map((r) => {
      const event = r.firstBadEvent ? ` at event #${r.firstBadEvent.eventId} ${r.firstBadEvent.eventType}` : '';
      return `${r.workflowId} run ${r.runId ?? '?'}${event}`;
    })
    .join('; ');
  const n = bad.length === 1 ? '1 history' : `${bad.length} histories`;
  return (
    `promotion of ${buildId} refused: ${n} of the current version ${currentBuildId} ${bad.length === 1 ? 'does' : 'do'} not replay on its code (${which}). ` +
    'The routing is unchanged. Make the change replay (`starry replay --recent N` checks it), or guard the changed step with patched() (docs/ARCHITECTURE.md#versioning)'
  );
}
