/**
 * Replay a workflow history against the current workflow code (docs/ARCHITECTURE.md#replay): from the server or from a
 * JSON file (`temporal workflow show --output json` or `historyToJSON`). A non-deterministic change is
 * reported with the first event that no longer matches.
 */
import { readFileSync } from 'node:fs';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { currentRun, runEvents } from '../client/history';
import { ROLLOUT_WORKFLOW_TYPES } from '../core/rollout';
import { loadPlugins, pluginList } from '../workers/plugins';
import { workflowSource } from '../workers/worker';

type History = temporal.api.history.v1.IHistory;

export interface ReplayReport {
  workflowId: string;
  /** The run replayed, when the history came from the server by run. */
  runId?: string;
  workflowType?: string;
  events: number;
  ok: boolean;
  /** The replayer's own message when it failed. */
  error?: string;
  /** The first event the current code no longer produces (when the replayer names one). */
  firstBadEvent?: { eventId: number; eventType: string };
}

export function loadHistoryFile(file: string): History {
  const json = JSON.parse(readFileSync(file, 'utf8'));
  return historyFromJSON(json);
}

/** gRPC's NOT_FOUND, what the server answers for a workflow id it does not have. */
const NOT_FOUND = 5;

/**
 * The history of a workflow on the server (its latest run), read in pages under gRPC's message limit
 * (client/history.ts), so a history of any size can be replayed.
 * @throws WorkflowNotFoundError when the server has no workflow of that id.
 */
export async function fetchHistory(client: Client, workflowId: string): Promise<History> {
  try {
    const { runId } = await currentRun(client, workflowId);
    const events: temporal.api.history.v1.IHistoryEvent[] = [];
    for await (const e of runEvents(client, workflowId, runId, {})) events.push(e);
    return { events };
  } catch (err) {
    if ((err as { code?: number }).code === NOT_FOUND)
      throw new WorkflowNotFoundError(`workflow ${workflowId} not found`, workflowId, undefined);
    throw err;
  }
}

const EVENT_TYPE_PREFIX = 'EVENT_TYPE_';

function eventTypeName(t: unknown): string {
  // Proto enums arrive as numbers (from the server) or names (from JSON).
  const name = typeof t === 'number' ? temporal.api.enums.v1.EventType[t] : t;
  return String(name ?? t).replace(EVENT_TYPE_PREFIX, '');
}

/**
 * The event a nondeterminism message points at: by id when the message has one, else the first
 * event that carries the value the message quotes (e.g. "scheduled event 'toolRenamed'"). For the
 * report only; nothing decides on it.
 */
function findBadEvent(
  message: string,
  events: temporal.api.history.v1.IHistoryEvent[],
): temporal.api.history.v1.IHistoryEvent | undefined {
  const id = /event[ _]?id\D{0,5}(\d+)/i.exec(message)?.[1] ?? /HistoryEvent\(id: (\d+)/.exec(message)?.[1];
  if (id) return events.find((e) => Number(e.eventId) === Number(id));
  // "Missing associated machine for LocalActivity(1)": the code no longer runs the local activity whose
  // marker the history holds under that sequence number.
  const seq = /LocalActivity\((\d+)\)/.exec(message)?.[1];
  if (seq) return events.find((e) => localActivitySeq(e) === Number(seq));
  const quoted = /'([^']+)'/.exec(message)?.[1];
  if (!quoted) return undefined;
  return events.find((e) => JSON.stringify(e).includes(JSON.stringify(quoted)));
}

/** The sequence number of a local activity's marker (the SDK core's marker data), else undefined. */
function localActivitySeq(e: temporal.api.history.v1.IHistoryEvent): number | undefined {
  const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
  if (!data) return undefined;
  try {
    const seq = (JSON.parse(Buffer.from(data).toString('utf8')) as { seq?: unknown }).seq;
    return typeof seq === 'number' ? seq : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Replay one history.
 *
 * ```ts
 * const report = await replayHistory(loadHistoryFile('test/fixtures/histories/eperm-task.json'), 'eperm-task');
 * if (!report.ok) console.error(report.error);
 * ```
 */
export async function replayHistory(history: History, workflowId = 'replay'): Promise<ReplayReport> {
  const events = history.events ?? [];
  const started = events[0]?.workflowExecutionStartedEventAttributes;
  const report: ReplayReport = { workflowId, events: events.length, ok: true };
  if (started?.workflowType?.name) report.workflowType = started.workflowType.name;
  if (report.workflowType && !(ROLLOUT_WORKFLOW_TYPES as readonly string[]).includes(report.workflowType)) {
    report.ok = false;
    report.error = `the history is of workflow type ${report.workflowType}, which this build does not have (its workflows: ${ROLLOUT_WORKFLOW_TYPES.join(', ')}): replay it with the workers of the application that ran it`;
    return report;
  }
  try {
    // A worker's plugins (STARRY_PLUGINS) are in its workflow code: a task with its own guide replays with them.
    const plugins = process.env.STARRY_PLUGINS ? loadPlugins(pluginList(process.env.STARRY_PLUGINS)) : undefined;
    await Worker.runReplayHistory(
      {
        ...workflowSource(plugins ? undefined : process.env.STARRY_WORKFLOW_BUNDLE, plugins),
        replayName: 'starry-replay',
      },
      history,
      workflowId,
    );
  } catch (err) {
    failed(report, err, events);
  }
  return report;
}

/** Mark `report` failed by `err`, naming the first event that no longer matches when the message points at one. */
export function failed(report: ReplayReport, err: unknown, events: temporal.api.history.v1.IHistoryEvent[]): void {
  report.ok = false;
  report.error = err instanceof Error ? err.message : String(err);
  const event = findBadEvent(report.error, events);
  if (event) report.firstBadEvent = { eventId: Number(event.eventId), eventType: eventTypeName(event.eventType) };
}
