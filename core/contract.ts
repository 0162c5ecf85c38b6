/**
 * The public contract, schema-first: every payload a client sends to an agent (submit, halt, unlock,
 * message), what a task reports to its agent (progress), and every result a client reads (TaskResult,
 * AgentStatus). The types are `z.infer` of these schemas; the CLI, the HTTP API, the client and the
 * workflows' update validators and signal handlers all check payloads with them, so a bad payload is
 * refused to its caller and never reaches workflow state. See docs/ARCHITECTURE.md ("Contract").
 */
import { z } from 'zod';
import type { AgentConfig } from './config';
import { ERROR_CODES, InvalidArgumentError } from './errors';
import { MAX_TASK_PRIORITY, MIN_TASK_PRIORITY } from './priority-inbox';

/** Bounds that keep every payload and the agent's carried state far inside Temporal's 2 MB payload limit. */
export const LIMITS = {
  /** Characters of a task's goal. */
  goalChars: 8_000,
  /** Tasks waiting in one agent's inbox; more is refused until it drains. */
  queuedTasks: 100,
  /** Tasks cancelled by halts that the agent remembers (the newest), each with its whole input. */
  cancelledTasks: 100,
  /** Submit answers the agent remembers by update id, so an update delivered again is answered once. */
  rememberedSubmits: 64,
  /** Finished task results an agent keeps in its state (the newest). */
  keptResults: 20,
  /** Characters of one human message. */
  messageChars: 8_000,
  /** Characters of a halt or unlock note. */
  noteChars: 2_000,
  /** Characters of a `by` (who acted). */
  byChars: 200,
  /** Human messages waiting for the next task while none runs. */
  pendingMessages: 20,
  /** Human messages one task run may receive. */
  messagesPerRun: 50,
  /** Characters of any one string (tool argument, error, injection, answer) in the results an agent keeps. */
  keptStringChars: 2_000,
  /**
   * Bytes (JSON, UTF-8) of one result as the agent keeps it, and of a task workflow's own result, so
   * results never push an agent's state or a task's completion past Temporal's 2 MB payload limit.
   */
  keptResultBytes: 16_000,
  taskResultBytes: 512_000,
  /** Bytes (JSON) of the messages one LLM call carries in its input (runs recorded before the transcript store); more fails the task, named. */
  llmInputBytes: 1_500_000,
  /**
   * Times one LLM or tool call is run again after its worker was lost mid-call (heartbeats stopped, not
   * the call's own failure, so no pain and no spent retry); one more loss counts as the call's failure.
   */
  workerLossReruns: 5,
  /** Bytes (JSON) of all an agent carries: a submit that would pass it is refused. */
  agentStateBytes: 1_500_000,
  /** Tokens one unlock may add to the budget. */
  addTokens: 100_000_000,
} as const;

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
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, `${name} may hold only letters, digits, "_", "." and "-", and must start with a letter or digit`)
    .refine((id) => !id.includes('-task'), `${name} must not contain "-task" (it separates agents from their tasks in workflow ids)`);
}

/**
 * An agent id (`nameSchema`): `-task` never in it, so `agent-<agentId>` and `agent-<agentId>-task-…`
 * can never be the same id for two different agents.
 */
export const AgentIdSchema = nameSchema('agentId');

/** A task id: `task-` followed by 1–60 of `A-Z a-z 0-9 _ . -`; the agent numbers its own `task-1`, `task-2`, … */
export const TaskIdSchema = z
  .string({ error: 'taskId must be a string' })
  .regex(/^task-[A-Za-z0-9_.-]{1,60}$/, 'taskId must be "task-" followed by 1-60 letters, digits, "_", "." or "-"');

// ---- states and results ------------------------------------------------------------------------------

export const AgentStateSchema = z.enum(['WAITING_FOR_EVENT', 'EXECUTING', 'SAFETY_LOCKOUT', 'ERROR_PAUSED', 'STOPPED']);
/** The agent state machine of the seeds. */
export type AgentState = z.infer<typeof AgentStateSchema>;

export const LockReasonCodeSchema = z.enum(['LOOP_CAP', 'BUDGET_EXHAUSTED', 'REPEATED_FAILURE', 'ERROR_CASCADE', 'SYSTEM_HALT', 'FATAL', 'HISTORY_LIMIT']);
/** Why an agent is locked (or why a task stopped). */
export type LockReasonCode = z.infer<typeof LockReasonCodeSchema>;

export const LockReasonSchema = z.object({ code: LockReasonCodeSchema, message: z.string() });
export type LockReason = z.infer<typeof LockReasonSchema>;

export const TaskOutcomeSchema = z.enum(['COMPLETED', 'FAILED', 'CANCELLED', 'SUSPENDED', 'ABORTED']);
/** How one task ended. SUSPENDED: a breaker locked the agent; `admin:unlock` resumes or aborts it. */
export type TaskOutcome = z.infer<typeof TaskOutcomeSchema>;

export const NormalizedErrorSchema = z.object({
  code: z.enum(ERROR_CODES),
  message: z.string(),
  source: z.string(),
  suggestion: z.string().optional(),
  kind: z.enum(['execution', 'transient', 'fatal']),
});

export const ToolCallRecordSchema = z.object({
  tick: z.number().int(),
  name: z.string(),
  args: z.unknown(),
  fingerprint: z.string(),
  status: z.enum(['ok', 'failed', 'skipped']),
  error: NormalizedErrorSchema.optional(),
});
/** One tool call as the loop saw it. */
export type ToolCallRecord = z.infer<typeof ToolCallRecordSchema>;

export const InjectionKindSchema = z.enum(['PAIN', 'REPEAT_ALERT', 'FRUSTRATION', 'VERIFY', 'MESSAGE']);
export type InjectionKind = z.infer<typeof InjectionKindSchema>;

export const InjectionSchema = z.object({ tick: z.number().int(), kind: InjectionKindSchema, text: z.string() });
/** Text the system put into the LLM's context: pain, alerts, human messages. */
export type Injection = z.infer<typeof InjectionSchema>;

export const TaskResultSchema = z.object({
  agentId: z.string(),
  taskId: z.string(),
  workflowId: z.string(),
  outcome: TaskOutcomeSchema,
  agentState: AgentStateSchema,
  reason: LockReasonSchema.optional(),
  ticks: z.number().int(),
  tokensUsed: z.number().int(),
  toolCalls: z.array(ToolCallRecordSchema),
  injections: z.array(InjectionSchema),
  finalText: z.string().optional(),
  /** How many of the oldest tool calls and injections were left out to keep the result bounded. */
  omitted: z.object({ toolCalls: z.number().int().min(0), injections: z.number().int().min(0) }).optional(),
  /** Present when the task FAILED: what the provider or the system said. */
  error: NormalizedErrorSchema.optional(),
  /**
   * Where the whole transcript lives in the content store: the manifest of the last LLM call's context
   * (it links to every earlier one) and the messages after it. `starry logs --transcript` prints it.
   */
  transcript: z
    .object({
      manifest: z.string().optional(),
      tail: z.array(z.object({ role: z.enum(['system', 'user', 'assistant', 'tool']), ref: z.string().optional(), text: z.string().optional() }).passthrough()),
    })
    .optional(),
});
/** The result JSON of `starry run --json`, of `GET /v1/tasks/{workflowId}` and of the `state` query's task entries. */
export type TaskResult = z.infer<typeof TaskResultSchema>;

export const SafetyCountersSchema = z.object({
  consecutiveFailures: z.number().int().min(0),
  repeat: z.object({ fingerprint: z.string(), toolName: z.string(), count: z.number().int().min(0) }).nullable(),
  window: z.array(z.enum(['ok', 'failed'])),
});

// ---- messages to an agent ----------------------------------------------------------------------------

const by = z.string().min(1).max(LIMITS.byChars, `by must be at most ${LIMITS.byChars} characters`);
const note = z.string().max(LIMITS.noteChars, `note must be at most ${LIMITS.noteChars} characters`);

export const SubmitTaskInputSchema = z
  .object({
    goal: z
      .string({ error: 'goal must be a string' })
      .max(LIMITS.goalChars, `goal must be at most ${LIMITS.goalChars} characters`)
      .refine((g) => g.trim() !== '', 'the task needs a non-empty goal'),
    /** 1 (first) .. 9; default 5. Priority 0 belongs to SYSTEM_HALT. */
    priority: z
      .number({ error: 'priority must be a number' })
      .int('priority must be a whole number')
      .min(MIN_TASK_PRIORITY, `priority must be ${MIN_TASK_PRIORITY}..${MAX_TASK_PRIORITY} (0 is reserved for SYSTEM_HALT)`)
      .max(MAX_TASK_PRIORITY, `priority must be ${MIN_TASK_PRIORITY}..${MAX_TASK_PRIORITY}`)
      .optional(),
    /** Replaces the agent's config from this task on (a new agent's first task brings it): parsed at the edge, checked again by the agent. */
    config: z.unknown().optional(),
    /** Caller-chosen id, for idempotent submits; default `task-<n>`. */
    taskId: TaskIdSchema.optional(),
    /**
     * Epoch milliseconds by which a worker must take the submit, or the agent refuses it: a client that
     * gave up waiting (no worker took it) never has it run later, unseen.
     */
    acceptBy: z.number({ error: 'acceptBy must be a number' }).int('acceptBy must be a whole number').positive('acceptBy must be > 0').optional(),
  })
  .strict();
/** What a client sends to submit a task: its config already parsed (`parseAgentConfig`), sent once. */
export type SubmitTaskInput = Omit<z.infer<typeof SubmitTaskInputSchema>, 'config'> & { config?: AgentConfig };

/** The issue a refusal of a submit that came after its `acceptBy` carries: its client may send it again at once. */
export const SUBMIT_EXPIRED = 'acceptBy: the submit came after it';

/**
 * An idempotency key (the HTTP API's `Idempotency-Key`): 1–255 visible ASCII characters. A submit sent
 * again with the same key is answered as the first was.
 */
export const IdempotencyKeySchema = z
  .string({ error: 'the idempotency key must be a string' })
  .regex(/^[\x21-\x7e]{1,255}$/, 'the idempotency key must be 1-255 visible ASCII characters (a UUID, say)');

export const SubmitTaskResultSchema = z.object({ taskId: z.string(), workflowId: z.string(), position: z.number().int() });
export type SubmitTaskResult = z.infer<typeof SubmitTaskResultSchema>;

export const HaltInputSchema = z.object({ by: by.optional(), note: note.optional() }).strict();
/** `SYSTEM_HALT`'s payload: who stopped the agent and why. */
export type HaltInput = z.infer<typeof HaltInputSchema>;

export const UnlockInputSchema = z
  .object({
    resume: z.boolean({ error: 'resume must be true or false' }).optional(),
    addTokens: z
      .number({ error: 'addTokens must be a number' })
      .int('addTokens must be a whole number')
      .min(0, 'addTokens must be >= 0')
      .max(LIMITS.addTokens, `addTokens must be <= ${LIMITS.addTokens}`)
      .optional(),
    note: note.optional(),
    by: by.optional(),
  })
  .strict();
/** `admin:unlock`'s payload. */
export type UnlockInput = z.infer<typeof UnlockInputSchema>;

export const UnlockResultSchema = z.object({ unlocked: z.boolean(), agentState: AgentStateSchema, message: z.string() });
export type UnlockResult = z.infer<typeof UnlockResultSchema>;

export const HumanMessageSchema = z
  .object({
    text: z
      .string({ error: 'text must be a string' })
      .min(1, 'text must not be empty')
      .max(LIMITS.messageChars, `text must be at most ${LIMITS.messageChars} characters`),
    by: by.optional(),
  })
  .strict();
/** A human follow-up for the running task. */
export type HumanMessage = z.infer<typeof HumanMessageSchema>;

/** Where a human message went: to the running task, or kept for the agent's next task. */
export const MessageResultSchema = z.object({ delivered: z.enum(['running task', 'next task']), taskId: TaskIdSchema.optional() });
export type MessageResult = z.infer<typeof MessageResultSchema>;

export const TaskProgressSchema = z
  .object({
    taskId: z.string(),
    tick: z.number().int().min(0),
    /** The task's own usage so far, over all its runs. */
    tokensUsed: z.number().int().min(0),
    /** Usage of this run only (the agent adds it to its total when the run ends). */
    runTokens: z.number().int().min(0),
    counters: SafetyCountersSchema,
    lastErrorCode: z.string().optional(),
  })
  .strict();
/** What a task reports to its agent after each tick (for the agent's state query and search attributes). */
export type TaskProgress = z.infer<typeof TaskProgressSchema>;

/**
 * A cancelled task's output, sent to its agent before the task workflow ends CANCELED (a cancelled
 * workflow has no result to carry it). The rest of the output (lock, checkpoint, undelivered) passes through.
 */
export const TaskEndedSchema = z.object({ result: TaskResultSchema, counters: SafetyCountersSchema, runTokens: z.number().int().min(0) }).passthrough();

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

export const AgentStatusSchema = z.object({
  agentId: z.string(),
  agentState: AgentStateSchema,
  reason: LockReasonSchema.optional(),
  tokensUsed: z.number().int(),
  tokenBudget: z.number().int(),
  queue: z.array(z.object({ taskId: z.string(), priority: z.number().int(), goal: z.string() })),
  currentTask: z
    .object({
      taskId: z.string(),
      workflowId: z.string(),
      tick: z.number().int(),
      /** Tokens of the task's run counted in `tokensUsed` (the task reports them every few ticks; clients read the live count from the task). */
      runTokens: z.number().int().min(0).optional(),
    })
    .optional(),
  suspendedTask: z.object({ taskId: z.string(), workflowId: z.string() }).optional(),
  cancelledTasks: z.array(CancelledTaskSchema),
  counters: SafetyCountersSchema,
  /** The latest results, newest last. */
  tasks: z.array(TaskResultSchema),
  unlocks: z.array(UnlockRecordSchema),
  guide: z.string(),
  llm: z.string(),
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

// ---- checking --------------------------------------------------------------------------------------

/** `path: message` lines of a zod error. */
export function issueLines(error: z.ZodError): string[] {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
}

/**
 * Check a payload against a schema of this contract.
 *
 * ```ts
 * const unlock = parsePayload(UnlockInputSchema, raw, 'admin:unlock'); // throws InvalidArgumentError
 * ```
 * @throws InvalidArgumentError naming every invalid field.
 */
export function parsePayload<S extends z.ZodType>(schema: S, raw: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = issueLines(parsed.error);
  throw new InvalidArgumentError(`invalid ${what}: ${issues.join('; ')}`, { issues });
}
