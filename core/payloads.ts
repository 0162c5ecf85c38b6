/**
 * The part of the contract (core/contract.ts) that agents and tasks read at run time: the bounds, the
 * payloads they take (submit, halt, unlock, message, progress, a task's end) and the task result those
 * carry. Every schema is built on first use (`once`, core/lazy.ts): each new workflow evaluates this
 * module afresh, and most never meet most payloads. The client, the API and the CLI use the same
 * schemas, built, from core/contract.ts.
 */
import { z } from 'zod';
import type { TaskConfig } from './config';
import { ERROR_CODES, InvalidArgumentError } from './errors';
import { once } from './lazy';
import { MAX_TASK_PRIORITY, MIN_TASK_PRIORITY } from './priority-inbox';

import { LIMITS } from './payload-limits';

export { LIMITS };

// ---- ids and states -----------------------------------------------------------------------------

/** A task id: `task-` followed by 1–60 of `A-Z a-z 0-9 _ . -`; the agent numbers its own `task-1`, `task-2`, … */
export const taskIdSchema = once(() =>
  z
    .string({ error: 'taskId must be a string' })
    .regex(/^task-[A-Za-z0-9_.-]{1,60}$/, 'taskId must be "task-" followed by 1-60 letters, digits, "_", "." or "-"'),
);

export const AGENT_STATES = [
  'WAITING_FOR_EVENT',
  'EXECUTING',
  /** A tool call of the running task waits for a human's decision (`starry approvals`). */
  'WAITING_FOR_APPROVAL',
  'SAFETY_LOCKOUT',
  'ERROR_PAUSED',
  'STOPPED',
] as const;
export const agentStateSchema = once(() => z.enum(AGENT_STATES));
/** The agent state machine of the seeds. */
export type AgentState = (typeof AGENT_STATES)[number];

export const LOCK_REASON_CODES = [
  'LOOP_CAP',
  'BUDGET_EXHAUSTED',
  'REPEATED_FAILURE',
  'ERROR_CASCADE',
  'SYSTEM_HALT',
  'FATAL',
  'HISTORY_LIMIT',
  'COST_BUDGET_EXHAUSTED',
  /** The agent's shared budget (config `budget`) refused a lease: every agent drawing from it stops. */
  'SHARED_BUDGET_EXHAUSTED',
] as const;
export const lockReasonCodeSchema = once(() => z.enum(LOCK_REASON_CODES));
/** Why an agent is locked (or why a task stopped). */
export type LockReasonCode = (typeof LOCK_REASON_CODES)[number];

export const lockReasonSchema = once(() => z.object({ code: lockReasonCodeSchema(), message: z.string() }));
export type LockReason = z.infer<ReturnType<typeof lockReasonSchema>>;

export const TASK_OUTCOMES = ['COMPLETED', 'FAILED', 'CANCELLED', 'SUSPENDED', 'ABORTED'] as const;
export const taskOutcomeSchema = once(() => z.enum(TASK_OUTCOMES));
/** How one task ended. SUSPENDED: a breaker locked the agent; `admin:unlock` resumes or aborts it. */
export type TaskOutcome = (typeof TASK_OUTCOMES)[number];

// ---- the task result ----------------------------------------------------------------------------------

export const normalizedErrorSchema = once(() =>
  z.object({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    source: z.string(),
    suggestion: z.string().optional(),
    kind: z.enum(['execution', 'transient', 'fatal']),
  }),
);

export const toolCallRecordSchema = once(() =>
  z.object({
    tick: z.number().int(),
    name: z.string(),
    args: z.unknown(),
    fingerprint: z.string(),
    status: z.enum(['ok', 'failed', 'skipped']),
    error: normalizedErrorSchema().optional(),
    /** A call that waited for a human: what was decided, by whom, when (and the model's own args, if edited). */
    approval: z
      .object({
        decision: z.enum(['approved', 'denied', 'expired']),
        by: z.string().optional(),
        at: z.string().optional(),
        reason: z.string().optional(),
        note: z.string().optional(),
        modelArgs: z.unknown().optional(),
      })
      .optional(),
  }),
);
/** One tool call as the loop saw it. */
export type ToolCallRecord = z.infer<ReturnType<typeof toolCallRecordSchema>>;

export const INJECTION_KINDS = ['PAIN', 'REPEAT_ALERT', 'FRUSTRATION', 'VERIFY', 'MESSAGE', 'SUMMARY'] as const;
export const injectionKindSchema = once(() => z.enum(INJECTION_KINDS));
export type InjectionKind = (typeof INJECTION_KINDS)[number];

export const injectionSchema = once(() =>
  z.object({ tick: z.number().int(), kind: injectionKindSchema(), text: z.string() }),
);
/** Text the system put into the LLM's context: pain, alerts, human messages. */
export type Injection = z.infer<ReturnType<typeof injectionSchema>>;

export const taskResultSchema = once(() =>
  z.object({
    agentId: z.string(),
    taskId: z.string(),
    workflowId: z.string(),
    outcome: taskOutcomeSchema(),
    agentState: agentStateSchema(),
    reason: lockReasonSchema().optional(),
    ticks: z.number().int(),
    tokensUsed: z.number().int(),
    /** Of the input tokens in `tokensUsed`, those the provider read from its prompt cache (when it reports them). */
    cachedInputTokens: z.number().int().min(0).optional(),
    /** What the task's LLM calls cost in US dollars, when the task had a price for its model (core/pricing.ts). */
    costUsd: z.number().min(0).optional(),
    toolCalls: z.array(toolCallRecordSchema()),
    injections: z.array(injectionSchema()),
    finalText: z.string().optional(),
    /** The task's OpenTelemetry trace id (32 hex digits), when its worker traces: find the trace by it. */
    traceId: z.string().optional(),
    /** How many of the oldest tool calls and injections were left out to keep the result bounded. */
    omitted: z.object({ toolCalls: z.number().int().min(0), injections: z.number().int().min(0) }).optional(),
    /** Present when the task FAILED: what the provider or the system said. */
    error: normalizedErrorSchema().optional(),
    /**
     * Where the whole transcript lives in the content store: the manifest of the last LLM call's context
     * (it links to every earlier one) and the messages after it. `starry logs --transcript` prints it.
     */
    transcript: z
      .object({
        manifest: z.string().optional(),
        tail: z.array(
          z
            .object({
              role: z.enum(['system', 'user', 'assistant', 'tool']),
              ref: z.string().optional(),
              text: z.string().optional(),
            })
            .passthrough(),
        ),
      })
      .optional(),
  }),
);
/** The result JSON of `starry run --json`, of `GET /v1/tasks/{workflowId}` and of the `state` query's task entries. */
export type TaskResult = z.infer<ReturnType<typeof taskResultSchema>>;

export const safetyCountersSchema = once(() =>
  z.object({
    consecutiveFailures: z.number().int().min(0),
    repeat: z.object({ fingerprint: z.string(), toolName: z.string(), count: z.number().int().min(0) }).nullable(),
    window: z.array(z.enum(['ok', 'failed'])),
  }),
);

// ---- messages to an agent ----------------------------------------------------------------------------

/** Who acted (`by`), in any payload that names one. */
export const by = () => z.string().min(1).max(LIMITS.byChars, `by must be at most ${LIMITS.byChars} characters`);
/** Why (`note`), in any payload that has one. */
export const note = () => z.string().max(LIMITS.noteChars, `note must be at most ${LIMITS.noteChars} characters`);

/** A task's goal: what `submitTask` and the HTTP API take. */
export const goalSchema = once(() =>
  z
    .string({ error: 'goal must be a string' })
    .max(LIMITS.goalChars, `goal must be at most ${LIMITS.goalChars} characters`)
    .refine((g) => g.trim() !== '', 'the task needs a non-empty goal'),
);

/** 1 (first) .. 9; default 5. Priority 0 belongs to SYSTEM_HALT. */
export const prioritySchema = once(() =>
  z
    .number({ error: 'priority must be a number' })
    .int('priority must be a whole number')
    .min(
      MIN_TASK_PRIORITY,
      `priority must be ${MIN_TASK_PRIORITY}..${MAX_TASK_PRIORITY} (0 is reserved for SYSTEM_HALT)`,
    )
    .max(MAX_TASK_PRIORITY, `priority must be ${MIN_TASK_PRIORITY}..${MAX_TASK_PRIORITY}`),
);

/**
 * `submitTask`'s payload. Its `config`, when present, is an agent config (core/config.ts), checked by
 * `parseAgentConfig` (the agent fills in its own `llm` when the config names none): the edge sends it
 * parsed (`AgentConfig`), and a parsed config parses to itself. Without one, the task runs with the
 * agent's config.
 */
/** A W3C trace context header: version 00, a trace id and a span id (not all zeros), flags. */
export const traceparentSchema = once(() =>
  z
    .string({ error: 'traceparent must be a string' })
    .regex(
      /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/,
      'traceparent must be a W3C trace context: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lower case, ids not all zeros',
    ),
);

export const submitTaskInputSchema = once(() =>
  z
    .object({
      goal: goalSchema(),
      priority: prioritySchema().optional(),
      /**
       * Replaces the agent's config from this task on, but for its limits (`safety`): a task may tighten
       * them for its own run only, never loosen them (core/limits.ts).
       */
      config: z.unknown().optional(),
      /** Caller-chosen id, for idempotent submits; default `task-<n>`. */
      taskId: taskIdSchema().optional(),
      /**
       * Epoch milliseconds by which a worker must take the submit, or the agent refuses it: a client that
       * gave up waiting (no worker took it) never has it run later, unseen.
       */
      acceptBy: z
        .number({ error: 'acceptBy must be a number' })
        .int('acceptBy must be a whole number')
        .positive('acceptBy must be > 0')
        .optional(),
      /**
       * The caller's W3C trace context (`traceparent`): the task's trace links to the caller's span, so a
       * request's trace leads to the task it started (docs/OBSERVABILITY.md).
       */
      traceparent: traceparentSchema().optional(),
    })
    .strict(),
);
/**
 * What a client sends to submit a task: the edge's parsed config (`parseTaskConfig`: its `safety` only
 * the limits it gives; a whole `AgentConfig` gives them all), or none for the agent's own.
 */
export type SubmitTaskInput = Omit<z.infer<ReturnType<typeof submitTaskInputSchema>>, 'config'> & {
  config?: TaskConfig;
};

/** The issue a refusal of a submit that came after its `acceptBy` carries: its client may send it again at once. */
export const SUBMIT_EXPIRED = 'acceptBy: the submit came after it';

export const haltInputSchema = once(() => z.object({ by: by().optional(), note: note().optional() }).strict());
/** `SYSTEM_HALT`'s payload: who stopped the agent and why. */
export type HaltInput = z.infer<ReturnType<typeof haltInputSchema>>;

export const unlockInputSchema = once(() =>
  z
    .object({
      resume: z.boolean({ error: 'resume must be true or false' }).optional(),
      addTokens: z
        .number({ error: 'addTokens must be a number' })
        .int('addTokens must be a whole number')
        .min(0, 'addTokens must be >= 0')
        .max(LIMITS.addTokens, `addTokens must be <= ${LIMITS.addTokens}`)
        .optional(),
      note: note().optional(),
      by: by().optional(),
    })
    .strict(),
);
/** `admin:unlock`'s payload. */
export type UnlockInput = z.infer<ReturnType<typeof unlockInputSchema>>;

export const humanMessageSchema = once(() =>
  z
    .object({
      text: z
        .string({ error: 'text must be a string' })
        .min(1, 'text must not be empty')
        .max(LIMITS.messageChars, `text must be at most ${LIMITS.messageChars} characters`),
      by: by().optional(),
    })
    .strict(),
);
/** A human follow-up for the running task. */
export type HumanMessage = z.infer<ReturnType<typeof humanMessageSchema>>;

export const taskProgressSchema = once(() =>
  z
    .object({
      taskId: z.string(),
      tick: z.number().int().min(0),
      /** The task's own usage so far, over all its runs. */
      tokensUsed: z.number().int().min(0),
      /** Usage of this run only (the agent adds it to its total when the run ends). */
      runTokens: z.number().int().min(0),
      /** Cached input tokens and cost of this run only, when there are some (the agent adds them likewise). */
      runCachedInputTokens: z.number().int().min(0).optional(),
      runCostUsd: z.number().min(0).optional(),
      counters: safetyCountersSchema(),
      lastErrorCode: z.string().optional(),
      /** The task's trace id, when its worker traces. */
      traceId: z.string().optional(),
    })
    .strict(),
);
/** What a task reports to its agent every few ticks (for the agent's state query and search attributes). */
export type TaskProgress = z.infer<ReturnType<typeof taskProgressSchema>>;

/**
 * A cancelled task's output, sent to its agent before the task workflow ends CANCELED (a cancelled
 * workflow has no result to carry it). The rest of the output (lock, checkpoint, undelivered) passes through.
 */
export const taskEndedSchema = once(() =>
  z
    .object({ result: taskResultSchema(), counters: safetyCountersSchema(), runTokens: z.number().int().min(0) })
    .passthrough(),
);

// ---- checking --------------------------------------------------------------------------------------

/** `path: message` lines of a zod error. */
export function issueLines(error: z.ZodError): string[] {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
}

/**
 * Check a payload against a schema of this contract.
 *
 * ```ts
 * const unlock = parsePayload(unlockInputSchema(), raw, 'admin:unlock'); // throws InvalidArgumentError
 * ```
 * @throws InvalidArgumentError naming every invalid field.
 */
export function parsePayload<S extends z.ZodType>(schema: S, raw: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = issueLines(parsed.error);
  throw new InvalidArgumentError(`invalid ${what}: ${issues.join('; ')}`, { issues });
}
