/**
 * The worker's log lines. The SDK logs every failed activity attempt and every failed workflow as a
 * WARN with a raw JSON dump; here a failure the project classified (a NormalizedError in its details)
 * reads as one line that says what failed, why, which attempt, and what happens next. Pain (an
 * execution error the agent is told about) and a task that failed on purpose are expected outcomes:
 * `quiet` loggers (the CLI's embedded worker, the tests) leave them out, as the task's own record shows them.
 */
import {
  DefaultLogger,
  makeTelemetryFilterString,
  Runtime,
  type LogEntry,
  type LogLevel,
  type MetricsBuffer,
} from '@temporalio/worker';
import type { NormalizedError } from '../core/errors';

interface FailureMeta {
  activityType?: string;
  workflowType?: string;
  workflowId?: string;
  attempt?: number;
  error?: { type?: string; nonRetryable?: boolean; details?: unknown[]; message?: string };
}

function normalizedDetail(meta: FailureMeta): NormalizedError | undefined {
  const d = meta.error?.details?.[0] as Partial<NormalizedError> | undefined;
  return d && typeof d.code === 'string' && typeof d.message === 'string' && typeof d.kind === 'string'
    ? (d as NormalizedError)
    : undefined;
}

const NEXT: Record<NormalizedError['kind'], string> = {
  execution: 'not retried: fed back to the agent as pain',
  transient: 'transient: Temporal retries it with backoff',
  fatal: 'fatal: not retried, the agent pauses for a human',
};

/** What a line is: a classified activity failure (and its kind), a task that failed on purpose, or anything else. */
export function describeLogEntry(
  entry: Pick<LogEntry, 'message' | 'meta'>,
): { text: string; expected: boolean } | undefined {
  const meta = (entry.meta ?? {}) as FailureMeta;
  if (entry.message === 'Activity failed') {
    const error = normalizedDetail(meta);
    if (!error) return undefined;
    const where = meta.workflowId ? ` in ${meta.workflowId}` : '';
    return {
      text: `activity ${meta.activityType ?? '?'}${where} failed (attempt ${meta.attempt ?? 1}): ${error.code}: ${error.message} — ${NEXT[error.kind]}`,
      expected: error.kind === 'execution',
    };
  }
  if (entry.message === 'Workflow failed' && meta.workflowType === 'taskWorkflow') {
    // TaskFailed carries the transcript to the agent, which records the outcome and locks if it must.
    return { text: `task workflow ${meta.workflowId ?? '?'} failed; its agent records the result`, expected: true };
  }
  return undefined;
}

/** One line for an SDK log entry: the described form when there is one, else the message and its metadata. */
export function formatLogEntry(entry: LogEntry): string {
  const described = describeLogEntry(entry);
  if (described) return described.text;
  return `${entry.message}${entry.meta && Object.keys(entry.meta).length ? ` ${JSON.stringify(entry.meta)}` : ''}`;
}

/**
 * Install the process's SDK logger (once): lines at `level` and above to stderr, each as formatLogEntry
 * says; `quiet` leaves out the expected outcomes (pain, a task that failed on purpose). `metrics` (a
 * started workers/metrics.ts pipeline) collects Temporal's metrics, and the workflows' counters, in its
 * buffer: the runtime is installed once, so it must come with this call. Returns false when a runtime
 * was installed already (its logger and metrics stay).
 */
export function installWorkerLogger(
  level: LogLevel,
  opts: {
    quiet?: boolean;
    skip?: (entry: LogEntry) => boolean;
    coreErrorsOnly?: boolean;
    metrics?: { buffer: MetricsBuffer };
  } = {},
): boolean {
  try {
    Runtime.install({
      // Core's own warnings (payload size, nondeterminism) come through this logger too, not as raw
      // ANSI-coloured lines of its own. Forwarding holds the process open until the runtime's last worker
      // or connection closes, so a process that may create none (a test file) keeps core to its errors.
      telemetryOptions: {
        logging: opts.coreErrorsOnly
          ? { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }), console: {} }
          : { filter: makeTelemetryFilterString({ core: level, other: level }), forward: {} },
        // The resource of the provider the buffer drains into names the service: no service_name label.
        ...(opts.metrics ? { metrics: { buffer: opts.metrics.buffer, attachServiceName: false } } : {}),
      },
      logger: new DefaultLogger(level, (entry) => {
        if (opts.quiet && describeLogEntry(entry)?.expected) return;
        if (opts.skip?.(entry)) return;
        process.stderr.write(`[worker ${entry.level}] ${formatLogEntry(entry)}\n`);
      }),
    });
    return true;
  } catch {
    // A runtime is already installed in this process: its logger stays.
    return false;
  }
}
