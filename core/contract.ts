/**
 * The public contract, schema-first: every payload a client sends to an agent (submit, halt, unlock,
 * message), what a task reports to its agent (progress), and every result a client reads (TaskResult,
 * AgentStatus). The types are `z.infer` of these schemas; the CLI, the HTTP API, the client and the
 * workflows' update validators and signal handlers all check payloads with them, so a bad payload is
 * refused to its caller and never reaches workflow state. See docs/ARCHITECTURE.md ("Contract").
 *
 * What the workflows read at run time is defined in core/payloads.ts, built on first use there; this
 * module builds it for the clients, under the contract's names.
 */
import { z } from 'zod';
import { approvalDecisionSchema, decisionInputSchema, pendingApprovalSchema } from './approval';
import {
  agentStateSchema,
  haltInputSchema,
  humanMessageSchema,
  injectionKindSchema,
  injectionSchema,
  lockReasonCodeSchema,
  lockReasonSchema,
  normalizedErrorSchema,
  safetyCountersSchema,
  submitTaskInputSchema,
  taskEndedSchema,
  taskIdSchema,
  taskOutcomeSchema,
  taskProgressSchema,
  taskResultSchema,
  toolCallRecordSchema,
  unlockInputSchema,
} from './payloads';
import { limitsInputSchema } from './limits';

export { issueLines, LIMITS, parsePayload, SUBMIT_EXPIRED } from './payloads';
export type {
  AgentState,
  HaltInput,
  HumanMessage,
  Injection,
  InjectionKind,
  LockReason,
  LockReasonCode,
  SubmitTaskInput,
  TaskOutcome,
  TaskProgress,
  TaskResult,
  ToolCallRecord,
  UnlockInput,
} from './payloads';

// ---- ids -------------------------------------------------------------------------------------------

/**
 * The shape of agent and tenant ids, named `name` in its messages: 1–64 of `A-Z a-z 0-9 _ . -`,
 * starting with a letter or digit, never containing `-task` (which separates an agent from its tasks
 * in workflow ids).
 *
 * ```ts
 * const TenantIdSchema = nameSchema('tenant');
 * ```
 */
export function nameSchema(name: string) {
  return z
    .string({ error: `${name} must be a string` })
    .min(1, `${name} must not be empty`)
    .max(64, `${name} must be at most 64 characters`)
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
      `${name} may hold only letters, digits, "_", "." and "-", and must start with a letter or digit`,
    )
    .refine(
      (id) => !id.includes('-task'),
      `${name} must not contain "-task" (it separates agents from their tasks in workflow ids)`,
    );
}

/**
 * An agent id (`nameSchema`): `-task` never in it, so `agent-<agentId>` and `agent-<agentId>-task-…`
 * can never be the same id for two different agents.
 */
export const AgentIdSchema = nameSchema('agentId');

export const TaskIdSchema = taskIdSchema();

// ---- states and results ------------------------------------------------------------------------------

export const AgentStateSchema = agentStateSchema();
export const LockReasonCodeSchema = lockReasonCodeSchema();
export const LockReasonSchema = lockReasonSchema();
export const TaskOutcomeSchema = taskOutcomeSchema();
export const NormalizedErrorSchema = normalizedErrorSchema();
export const ToolCallRecordSchema = toolCallRecordSchema();
export const InjectionKindSchema = injectionKindSchema();
export const InjectionSchema = injectionSchema();
export const TaskResultSchema = taskResultSchema();
export const SafetyCountersSchema = safetyCountersSchema();

/** A tool call waiting for a human: `starry approvals`, `GET /v1/approvals`. */
export const PendingApprovalSchema = pendingApprovalSchema();
/** Waiting calls of one agent or of all: `GET /v1/approvals`, `starry approvals --json`. */
export const ApprovalListSchema = z.object({
  approvals: z.array(PendingApprovalSchema.extend({ agentId: z.string() })),
});
export type ApprovalList = z.infer<typeof ApprovalListSchema>;
/** A human's decision as the agent took it (the answer of `decideApproval`). */
export const ApprovalDecisionSchema = approvalDecisionSchema();

// ---- messages to an agent ----------------------------------------------------------------------------

/** The `decideApproval` update's payload: approve (optionally with edited args) or deny a waiting call. */
export const DecisionInputSchema = decisionInputSchema();

export const SubmitTaskInputSchema = submitTaskInputSchema();

/**
 * An idempotency key (the HTTP API's `Idempotency-Key`): 1–255 visible ASCII characters. A submit sent
 * again with the same key is answered as the first was.
 */
export const IdempotencyKeySchema = z
  .string({ error: 'the idempotency key must be a string' })
  .regex(/^[\x21-\x7e]{1,255}$/, 'the idempotency key must be 1-255 visible ASCII characters (a UUID, say)');
export const HaltInputSchema = haltInputSchema();
export const UnlockInputSchema = unlockInputSchema();
export const HumanMessageSchema = humanMessageSchema();
export const LimitsInputSchema = limitsInputSchema();
export type { LimitsInput } from './limits';
export const TaskProgressSchema = taskProgressSchema();
export const TaskEndedSchema = taskEndedSchema();

export const SubmitTaskResultSchema = z.object({
  taskId: z.string(),
  workflowId: z.string(),
  position: z.number().int(),
});
export type SubmitTaskResult = z.infer<typeof SubmitTaskResultSchema>;

export const UnlockResultSchema = z.object({
  unlocked: z.boolean(),
  agentState: AgentStateSchema,
  message: z.string(),
});
export type UnlockResult = z.infer<typeof UnlockResultSchema>;

/** An agent's limits: the `safety` fields of its config (core/limits.ts). */
export const LimitsSchema = z.object({
  maxTicks: z.number().int(),
  tokenBudget: z.number().int(),
  repeatThreshold: z.number().int(),
  frustrationThreshold: z.number().int(),
  cascadeWindow: z.number().int(),
  cascadeErrors: z.number().int(),
  toolTimeoutMs: z.number().int(),
  llmTimeoutMs: z.number().int(),
  maxOutputTokens: z.number().int(),
  /** USD; absent: no cost budget. */
  costBudgetUsd: z.number().optional(),
});

/** What `admin:limits` answers: the agent's limits now, and which fields changed. */
export const LimitsResultSchema = z.object({
  limits: LimitsSchema,
  /** The agent's approval rules now (absent: none). */
  approval: z.unknown().optional(),
  /** The shared budget the agent draws from now (absent: none). */
  budget: z.string().optional(),
  changed: z.array(z.string()),
  message: z.string(),
});
export type LimitsResult = z.infer<typeof LimitsResultSchema>;

/** Where a human message went: to the running task, or kept for the agent's next task. */
export const MessageResultSchema = z.object({
  delivered: z.enum(['running task', 'next task']),
  taskId: TaskIdSchema.optional(),
});
export type MessageResult = z.infer<typeof MessageResultSchema>;

export const TaskStatusSchema = TaskResultSchema.omit({ outcome: true, agentState: true }).extend({
  running: z.literal(true),
  /** A SYSTEM_HALT arrived: the call in flight is being cancelled and no further call starts. */
  halted: z.boolean(),
  counters: SafetyCountersSchema,
  lastErrorCode: z.string().optional(),
});
/** A running task's `state` query: everything its result has so far, plus its counters and whether a halt arrived. */
export type TaskStatus = z.infer<typeof TaskStatusSchema>;

// ---- the agent's state -------------------------------------------------------------------------------

export const CancelledTaskSchema = z.object({
  taskId: z.string(),
  goal: z.string(),
  priority: z.number().int(),
  reason: z.string(),
  /** The config it was submitted with, when it had its own: resubmitting it needs nothing else. */
  config: z.unknown().optional(),
});
export type CancelledTask = z.infer<typeof CancelledTaskSchema>;

export const UnlockRecordSchema = z.object({
  by: z.string(),
  note: z.string().optional(),
  from: AgentStateSchema,
  reason: LockReasonSchema.optional(),
  resume: z.boolean(),
  addTokens: z.number().int(),
});
export type UnlockRecord = z.infer<typeof UnlockRecordSchema>;

/** Who changed an agent's limits (`admin:limits`), from what to what (the changed fields only). */
export const LimitsRecordSchema = z.object({
  by: z.string(),
  note: z.string().optional(),
  from: LimitsSchema.partial(),
  to: LimitsSchema.partial(),
  /** The approval rules before and after, when the change replaced them (absent side: none). */
  approval: z.object({ from: z.unknown().optional(), to: z.unknown().optional() }).optional(),
  /** The shared budget before and after, when the change set it (absent side: none). */
  budget: z.object({ from: z.string().optional(), to: z.string().optional() }).optional(),
});
export type LimitsRecord = z.infer<typeof LimitsRecordSchema>;

export const AgentStatusSchema = z.object({
  agentId: z.string(),
  agentState: AgentStateSchema,
  reason: LockReasonSchema.optional(),
  /** A SYSTEM_HALT that reached the agent while it was locked already: its state and `reason` stay the first lock's. */
  halt: z.object({ by: z.string(), note: z.string().optional() }).optional(),
  tokensUsed: z.number().int(),
  tokenBudget: z.number().int(),
  /** Of the input tokens in `tokensUsed`, those the providers read from their prompt caches (absent: none reported). */
  cachedInputTokens: z.number().int().min(0).optional(),
  /** What the agent's LLM calls cost in USD, by the prices its tasks had (absent: none had a price). */
  costUsd: z.number().min(0).optional(),
  /** The agent's cost budget in USD (`safety.costBudgetUsd`), when it has one. */
  costBudgetUsd: z.number().optional(),
  queue: z.array(z.object({ taskId: z.string(), priority: z.number().int(), goal: z.string() })),
  currentTask: z
    .object({
      taskId: z.string(),
      workflowId: z.string(),
      tick: z.number().int(),
      /**
       * Tokens of the task's run counted in `tokensUsed` (the task reports them every few ticks; clients read the live
       * count from the task).
       */
      runTokens: z.number().int().min(0).optional(),
      /** The cost of the task's run counted in `costUsd`, when it has a price (reported likewise). */
      runCostUsd: z.number().min(0).optional(),
      /** The task's OpenTelemetry trace id, when its worker traces (docs/OBSERVABILITY.md). */
      traceId: z.string().optional(),
    })
    .optional(),
  suspendedTask: z.object({ taskId: z.string(), workflowId: z.string() }).optional(),
  cancelledTasks: z.array(CancelledTaskSchema),
  counters: SafetyCountersSchema,
  /** The latest results, newest last. */
  tasks: z.array(TaskResultSchema),
  unlocks: z.array(UnlockRecordSchema),
  /** The agent's limits (absent before its first config); a task may tighten them for its own run. */
  limits: LimitsSchema.optional(),
  /** The agent's approval rules (`tools.approval` of its first config, or an admin's): absent, none. */
  approvalRules: z.unknown().optional(),
  /** The latest changes of its limits by admins, newest last. */
  limitChanges: z.array(LimitsRecordSchema),
  /** The agent's guide and LLM spec (`openai:gpt-4o-mini`); empty before its first config. */
  guide: z.string(),
  llm: z.string(),
  /** Calls of the running task that wait for a human's decision (`starry approve` / `deny`). */
  approvals: z.array(PendingApprovalSchema).optional(),
});
/** The agent's `state` query, `starry status --json` and `GET /v1/agents/{agentId}`. */
export type AgentStatus = z.infer<typeof AgentStatusSchema>;

/** A page of running agents from the visibility store: `GET /v1/agents`, `starry list`. */
export const AgentListSchema = z.object({
  agents: z.array(
    z.object({
      agentId: z.string(),
      workflowId: z.string(),
      agentState: AgentStateSchema.optional(),
      lockReason: z.string().optional(),
      tokensUsed: z.number().int().optional(),
    }),
  ),
  /** Pass back to get the next page; absent on the last one. */
  nextPageToken: z.string().optional(),
});
export type AgentList = z.infer<typeof AgentListSchema>;

// ---- live events (`GET /v1/tasks/{workflowId}/events`, `GET /v1/agents/{agentId}/events`) -------------

const tick = z.number().int();
/**
 * The strings of the event's data cut to a preview (docs/API.md#large-events): where each was and its
 * whole length in characters. Absent when nothing was cut.
 */
const cut = z.array(z.object({ path: z.string(), chars: z.number().int() })).optional();
/**
 * The `data` of each Server-Sent Event, by its `event` name (docs/API.md#live-events). Built from the
 * workflows' histories (client/event-stream.ts), the same events `starry run` and `watch` print.
 */
export const StreamEventDataSchemas = {
  /** A tick began: its LLM call was scheduled. `injected`: what the system added for the model (alerts, messages). */
  tick: z.object({ tick, injected: z.array(z.string()), cut }),
  /** The model answered (text and tool calls, with usage), or its call failed after its retries (`error`). */
  llm: z.object({
    tick,
    text: z.string().optional(),
    toolCalls: z.array(z.object({ name: z.string(), args: z.unknown() })),
    usage: z
      .object({
        inputTokens: z.number().int(),
        outputTokens: z.number().int(),
        cachedInputTokens: z.number().int().optional(),
      })
      .optional(),
    error: z.string().optional(),
    /** When something was cut: the answer's message in the transcript store (its SHA-256), which holds it whole. */
    ref: z.string().optional(),
    cut,
  }),
  /**
   * A tool call: `started` (with its arguments), then `ok`, `error` (a normalized error the agent feels as
   * pain) or `failed` (the call itself failed: fatal or out of retries).
   */
  tool: z.object({
    tick,
    name: z.string(),
    status: z.enum(['started', 'ok', 'error', 'failed']),
    args: z.unknown().optional(),
    error: NormalizedErrorSchema.optional(),
    message: z.string().optional(),
    cut,
  }),
  /** What the Guide told the model a failure means (the pain it feels), before the tick's LLM call. */
  pain: z.object({ tick, text: z.string(), cut }),
  /** A daemon alert was raised (a lockout, a fatal error, a call that waits for approval). */
  alert: z.object({ reason: z.string(), alert: z.unknown().optional(), cut }),
  /** A human message reached the agent (the running task gets it before its next LLM call). */
  message: z.object({ text: z.string(), by: z.string().optional(), cut }),
  /** Calls that wait for a human (`waiting`), or a human's decision on one (`decided`). */
  approval: z.object({
    agentId: z.string().optional(),
    waiting: z.array(PendingApprovalSchema).optional(),
    decided: ApprovalDecisionSchema.optional(),
    cut,
  }),
  /** The agent's state changed; `by` and `note` name the human whose halt or unlock changed it. */
  state: z.object({
    state: AgentStateSchema,
    lockReason: z.string().optional(),
    by: z.string().optional(),
    note: z.string().optional(),
    cut,
  }),
  /** The agent started a task (agent streams only); its events follow, in this stream. */
  task: z.object({ taskId: z.string(), workflowId: z.string(), goal: z.string().optional(), cut }),
  /**
   * A task ended: how its workflow closed, and its TaskResult. In an agent stream, an `end` without a
   * `workflowId` is the agent's own workflow closing; the stream ends after it, and after a task stream's.
   */
  end: z.object({
    workflowId: z.string().optional(),
    status: z.enum(['completed', 'failed', 'canceled', 'terminated', 'timed out', 'continued as new']),
    message: z.string().optional(),
    result: TaskResultSchema.optional(),
    cut,
  }),
  /** The stream broke (Temporal out of reach); `retryable`: reconnect with `Last-Event-ID` to resume. */
  error: z.object({ message: z.string(), retryable: z.boolean() }),
};
export type StreamEventName = keyof typeof StreamEventDataSchemas;
export type StreamEventData<N extends StreamEventName = StreamEventName> = z.infer<(typeof StreamEventDataSchemas)[N]>;
/** One event of a live stream: `id` resumes after it (`Last-Event-ID`); absent on `error`. */
export type StreamEvent = {
  [N in StreamEventName]: { id?: string; event: N; data: StreamEventData<N> };
}[StreamEventName];
