/**
 * What one task run shares with its steps and hooks: its input and `TaskRun` (the pure bookkeeping,
 * core/task-run.ts), the activities it calls with their options, the cancellation scopes a halt acts on,
 * the hooks, and how the run ends (`finish`).
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { TaskRun, type TaskEnd, type TaskRunInput, type TaskRunOutput } from '../../core/task-run';
import { factsOf } from '../activity-facts';
import { TASK_FAILED } from '../messages';
import { addCounts, addEvents, type MaybeSpan } from '../telemetry';
import { Hooks, type Facts, type TaskHook } from './hooks';
import { report } from './progress';

/** The activities' options: the config's timeouts and retry policy; a cancellation waits for the activity. */
export interface CallOptions {
  llm: ActivityOptions;
  tool: ActivityOptions;
  listTools: LocalActivityOptions;
  /** The listing on a tool worker (it sends no heartbeats: an MCP server may take a while to start). */
  listOnToolQueue: ActivityOptions;
}

export class TaskScope {
  readonly run: TaskRun;
  readonly hooks: Hooks;
  readonly options: CallOptions;
  /** The task's activities, on its queue (the tool ones go where `hooks.toolOptions` says). */
  readonly activities: ReturnType<typeof proxyActivities<Activities>>;
  /** The local ones: the first listing, the budget's lease (one marker event each, no extra workflow task). */
  readonly local: ReturnType<typeof proxyLocalActivities<Activities>>;
  /**
   * The tick loop runs in this scope, so that a halt cancels the call in flight. It runs in it once, not
   * each call: entering a scope costs the workflow thread promises at every call, and no call starts
   * after a halt. Reports to the agent go from `root`, which a halt does not cancel.
   */
  readonly calls = new CancellationScope();
  readonly root = CancellationScope.current();
  /** The task's span, when its worker traces (set by the telemetry hook). */
  span: MaybeSpan;
  /** A cancellation of the task workflow itself arrived (SYSTEM_HALT through its agent, or the Web UI). */
  cancelled = false;

  constructor(
    readonly input: TaskRunInput,
    hooks: (t: TaskScope) => readonly TaskHook[],
  ) {
    this.options = callOptions(input);
    this.activities = proxyActivities<Activities>(this.options.llm);
    this.local = proxyLocalActivities<Activities>(this.options.listTools);
    this.run = new TaskRun(input, workflowInfo().workflowId, { store: true });
    this.hooks = new Hooks(hooks(this));
    // A halt reaches a task as a cancellation request from its agent: the run is halted, its call in
    // flight cancelled (the call's scope is a child of this one), and the workflow ends CANCELED.
    this.root.cancelRequested.catch(() => {
      this.cancelled = true;
      this.run.halt();
    });
  }

  get config() {
    return this.input.config;
  }

  /** The history's size, which the run weighs against Temporal's limits at each tick. */
  historySize(): { events: number; bytes: number } {
    const info = workflowInfo();
    return { events: info.historyLength, bytes: info.historySize };
  }

  /** No further call starts: a halt arrived. */
  halted(): boolean {
    return this.run.halted || this.cancelled;
  }

  /** Whether `err` is the halt's cancellation of what was in flight (the task then ends CANCELLED). */
  haltedBy(err: unknown): boolean {
    return this.halted() && isCancellation(err);
  }

  /** Run an activity call through the hooks (a lost worker's call runs again). */
  call<T>(what: string, call: () => Promise<T>): Promise<T> {
    return this.hooks.activity(this, what, call);
  }

  /** A tool activity's facts: a concern that knows better says (no tool worker polls its queue). */
  toolFacts(err: unknown, source: string): Facts {
    return this.hooks.toolFailure(this, err, source) ?? factsOf(err, source);
  }

  /** `TaskRun`'s facts to the task's span (pain on the tool call's) and its counts to the worker's metrics. */
  flush(call?: MaybeSpan): void {
    addEvents(this.run.drainEvents(), this.span, call);
    addCounts(this.run.drainCounts());
  }

  /** End the run: its output, its last report; a FAILED task fails its workflow, carrying the output. */
  finish(end: TaskEnd): TaskRunOutput {
    this.hooks.ending(this, end);
    this.flush();
    const out = this.run.close(end);
    addCounts(this.run.drainCounts()); // the outcome, and the lockout when the run locked its agent
    report(this.run, end.agentState, out.result.reason?.code, end.outcome);
    if (end.outcome === 'FAILED') {
      // The workflow itself fails (red in the Web UI), carrying the transcript to the agent.
      throw ApplicationFailure.create({
        type: TASK_FAILED,
        message: end.error?.message ?? 'task failed',
        nonRetryable: true,
        details: [out],
      });
    }
    return out;
  }
}

function callOptions({ config }: TaskRunInput): CallOptions {
  const common = {
    retry: {
      initialInterval: config.retry.initialIntervalMs,
      backoffCoefficient: config.retry.backoffCoefficient,
      maximumInterval: config.retry.maximumIntervalMs,
      maximumAttempts: config.retry.maximumAttempts,
    },
    // Wait for the activity to acknowledge a cancellation, so the history proves it stopped.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
  const llm: ActivityOptions = {
    ...common,
    startToCloseTimeout: config.safety.llmTimeoutMs,
    heartbeatTimeout: '10 seconds',
  };
  const listing = { ...common, startToCloseTimeout: config.safety.toolTimeoutMs };
  return {
    llm,
    tool: { ...llm, startToCloseTimeout: config.safety.toolTimeoutMs },
    listTools: listing,
    listOnToolQueue: listing,
  };
}
