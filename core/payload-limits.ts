/**
 * The bounds of everything an agent carries and every payload it sends: plain numbers, imported by the
 * schemas that check them (core/payloads.ts), the approval book and the result compactor, so that none
 * of them depends on another to know a bound.
 */

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
  /**
   * Bytes (JSON) of the messages one LLM call carries whole in its input (a run without the transcript store); more
   * fails the task, named.
   */
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
  /** Changes of an agent's limits it remembers (the newest), with who made them. */
  limitChanges: 20,
  /**
   * Events of an agent's run after which, idle, it continues as new (its state carried): an agent evicted
   * from its worker's cache replays its run at its next task, ~0.7 ms an event on two cores, so 200
   * events (~9 tasks) keep a wake within ~0.15 s of a cached one's; at Temporal's own suggestion (4,096
   * events) the replay took 2.7 s (docs/BENCHMARKS.md).
   */
  agentRunEvents: 200,
} as const;
