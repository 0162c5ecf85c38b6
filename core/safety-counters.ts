/**
 * The tool-outcome counters the afterToolExecution rungs read (docs/ARCHITECTURE.md#the-safety-ladder). Plain data,
 * updated by
 * returning a new object, so it passes through workflow state, queries and `continueAsNew` unchanged.
 */

/** The current run of identical consecutive failures. */
export interface RepeatRun {
  fingerprint: string;
  toolName: string;
  count: number;
}

/** Breaker state that carries across the tasks of one agent until `admin:unlock`. */
export interface SafetyCounters {
  consecutiveFailures: number;
  /** Current run of identical consecutive failures; `null` after a success. */
  repeat: RepeatRun | null;
  /** The last `cascadeWindow` operations, oldest first. */
  window: Array<'ok' | 'failed'>;
}

/**
 * Counters of an agent that has not failed yet.
 *
 * ```ts
 * const counters = initialCounters(); // { consecutiveFailures: 0, repeat: null, window: [] }
 * ```
 */
export function initialCounters(): SafetyCounters {
  return { consecutiveFailures: 0, repeat: null, window: [] };
}

/** One executed tool call (skipped calls are never recorded) and the window size to keep. */
export interface OperationRecord {
  toolName: string;
  fingerprint: string;
  success: boolean;
  cascadeWindow: number;
}

/**
 * The counters after one more operation. A success clears the consecutive and same-fingerprint
 * counters; the window slides either way. Never mutates `counters`.
 *
 * ```ts
 * const op = { toolName: 'fs.read', fingerprint: 'ab12cd34ef56ab78', success: false, cascadeWindow: 10 };
 * const next = recordOperation(initialCounters(), op);
 * next.repeat // { fingerprint: 'ab12cd34ef56ab78', toolName: 'fs.read', count: 1 }
 * ```
 * @throws RangeError when `cascadeWindow` is not a positive integer.
 */
export function recordOperation(counters: SafetyCounters, op: OperationRecord): SafetyCounters {
  if (!Number.isInteger(op.cascadeWindow) || op.cascadeWindow < 1) {
    throw new RangeError(`cascadeWindow must be a positive integer, got ${op.cascadeWindow}`);
  }
  const outcome: 'ok' | 'failed' = op.success ? 'ok' : 'failed';
  const window = [...counters.window, outcome].slice(-op.cascadeWindow);
  if (op.success) return { consecutiveFailures: 0, repeat: null, window };
  const run = counters.repeat;
  // The fingerprint already includes the tool name, so it alone decides "the same call".
  const repeat: RepeatRun =
    run !== null && run.fingerprint === op.fingerprint
      ? { ...run, count: run.count + 1 }
      : { fingerprint: op.fingerprint, toolName: op.toolName, count: 1 };
  return { consecutiveFailures: counters.consecutiveFailures + 1, repeat, window };
}

/**
 * Failed operations in the window.
 *
 * ```ts
 * failuresInWindow({ consecutiveFailures: 1, repeat: null, window: ['ok', 'failed'] }) // 1
 * ```
 */
export function failuresInWindow(counters: SafetyCounters): number {
  return counters.window.filter((outcome) => outcome === 'failed').length;
}
