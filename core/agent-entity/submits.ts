/**
 * The door of an agent's submits (`submitTask`): the one parse of a payload, the checks that need no
 * more than the submit (its `acceptBy`, its size against what the agent may carry), and the answers
 * given, by update id. Temporal may deliver an update again to the run after a continue-as-new
 * (temporalio/temporal#6375): the same update gets the same answer, once. Plain data in the agent's
 * `AgentData`; the functions change the part they are given.
 */
import { jsonBytes } from '../compact';
import { parseTaskConfig } from '../config';
import type { SubmitTaskResult } from '../contract';
import { RefusedError } from '../errors';
import type { LlmSpec } from '../llm-spec';
import { LIMITS, parsePayload, SUBMIT_EXPIRED, submitTaskInputSchema, type SubmitTaskInput } from '../payloads';

/** A `submitTask` payload after checking: its config complete. */
export type ParsedSubmit = SubmitTaskInput;

/** The answers to the latest submits. */
export interface SubmitsData {
  /**
   * The answers to the latest submits, by update id. Temporal may deliver an update again to the run
   * after a continue-as-new (temporalio/temporal#6375): the same update gets the same answer, once.
   */
  submits?: { updateId: string; result: SubmitTaskResult }[];
}

/**
 * Parse a raw `submitTask` payload: the contract's schema, and the config's (the edge sends it parsed,
 * which parses to itself; a config that names no `llm` takes `llm`, the agent's; of `safety` it keeps
 * the limits it gives). Pure.
 *
 * @throws InvalidArgumentError (a ConfigError for the config) naming every invalid field.
 */
export function parseSubmit(raw: unknown, llm: LlmSpec | undefined): ParsedSubmit {
  const input = parsePayload(submitTaskInputSchema(), raw, 'submitTask');
  const out: ParsedSubmit = { goal: input.goal };
  if (input.priority !== undefined) out.priority = input.priority;
  if (input.taskId !== undefined) out.taskId = input.taskId;
  if (input.acceptBy !== undefined) out.acceptBy = input.acceptBy;
  if (input.traceparent !== undefined) out.traceparent = input.traceparent;
  if (input.config !== undefined) out.config = parseTaskConfig(input.config, llm, 'task config');
  return out;
}

/**
 * Refuse a submit that reached the agent at `now`, after its `acceptBy` (its client stopped waiting).
 *
 * @throws RefusedError with the issue SUBMIT_EXPIRED.
 */
export function refuseLate(agentId: string, input: Pick<ParsedSubmit, 'acceptBy'>, now: number): void {
  if (input.acceptBy === undefined || now <= input.acceptBy) return;
  throw new RefusedError(
    `the submit reached agent ${agentId} at ${new Date(now).toISOString()}, after ${new Date(input.acceptBy).toISOString()}, when its client stopped waiting for a worker: it is not run. Submit it again (the same Idempotency-Key or task id is safe); if this keeps happening, the client's clock may be behind the server's`,
    { issues: [SUBMIT_EXPIRED] },
  );
}

/**
 * Refuse a submit that would take what the agent carries past `LIMITS.agentStateBytes`: everything goes
 * through continue-as-new as one payload, kept well inside Temporal's 2 MB.
 *
 * @throws RefusedError saying what to do.
 */
export function refuseOversize(agentId: string, carried: unknown, input: ParsedSubmit): void {
  const bytes = jsonBytes(carried) + jsonBytes(input);
  if (bytes > LIMITS.agentStateBytes) {
    throw new RefusedError(
      `agent ${agentId} would carry ${Math.ceil(bytes / 1000)} KB of queued, cancelled and recent tasks, more than the ${LIMITS.agentStateBytes / 1000} KB it keeps (Temporal's payload limit is 2 MB): submit again when some have run, or with a shorter goal`,
    );
  }
}

/** The answer already given to this submit update, when Temporal delivers it again. */
export function answeredSubmit(d: SubmitsData, updateId: string | undefined): SubmitTaskResult | undefined {
  return updateId === undefined ? undefined : d.submits?.find((s) => s.updateId === updateId)?.result;
}

/** Remember the answer to a submit update (the newest `LIMITS.rememberedSubmits`). */
export function rememberSubmit(d: SubmitsData, updateId: string | undefined, result: SubmitTaskResult): void {
  if (updateId !== undefined) d.submits = [...(d.submits ?? []), { updateId, result }].slice(-LIMITS.rememberedSubmits);
}
