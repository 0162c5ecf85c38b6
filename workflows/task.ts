/**
 * The task workflow: one agent task's tick loop (docs/ARCHITECTURE.md#workflows). It orchestrates only: `core/` decides
 * (SafetyMonitor, guides, validation, context), activities act (LLM, tools).
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { fitResult, jsonBytes } from '../core/compact';
import { HumanMessageSchema, LIMITS } from '../core/contract';
import { historyLimit } from '../core/safety-rungs';
import type { AgentConfig } from '../core/config';
import { assembleContext } from '../core/context';
import { failure, normalizedError, type NormalizedError, type ToolExecutionResult } from '../core/errors';
import { fingerprint } from '../core/fingerprint';
import { getGuide, type PainContext } from '../core/guides';
import type { LlmResponse } from '../core/llm';
import { llmLabel, parseLlmSpec } from '../core/llm-spec';
import { SafetyMonitor, type LockVerdict, type SafetyCounters } from '../core/safety-monitor';
import { toolSpecs, validateToolCall } from '../core/tools';
import type { AgentState, Injection, TaskCheckpoint, TaskOutcome, TaskResult, ToolCallRecord } from '../core/types';
import { frustrationFirst, retryHistory, skippedText, toolResultText, verifyText } from '../core/transcript';
import { factsOf } from './activity-facts';
import { haltSignal, messageSignal, taskProgressSignal, taskStateQuery, type HumanMessage, type TaskStatus } from './messages';
import { AgentIdKey, AgentStateKey, LastErrorCodeKey, LockReasonKey, TickIndexKey, TokensUsedKey } from './search-attributes';

type Activities = ReturnType<typeof createActivities>;

export interface TaskWorkflowInput {
  agentId: string;
  taskId: string;
  goal: string;
  config: AgentConfig;
  counters: SafetyCounters;
  /** The agent's cumulative usage before this run: the budget is per agent. */
  agentTokensUsed: number;
  /** Present when `admin:unlock --resume` continues a suspended task. */
  checkpoint?: TaskCheckpoint;
  /** Human messages that arrived while no task was running. */
  messages?: HumanMessage[];
}

export interface TaskWorkflowOutput {
  result: TaskResult;
  counters: SafetyCounters;
  /** Tokens this run used, to add to the agent's total. */
  runTokens: number;
  lock?: LockVerdict;
  /** Present when SUSPENDED. */
  checkpoint?: TaskCheckpoint;
  /** Human messages that arrived too late for this task's LLM; the agent keeps them for its next run. */
  undelivered?: HumanMessage[];
}

/** The failure type a FAILED task's workflow fails with; its first detail is the TaskWorkflowOutput. */
export const TASK_FAILED = 'TaskFailed';

/**
 * Run one task: ticks of context → LLM → tools until a final answer, a breaker, a halt or a failure.
 */
export async function taskWorkflow(input: TaskWorkflowInput): Promise<TaskWorkflowOutput> {
  const { config, agentId, taskId } = input;
  const { safety } = config;
  const guide = getGuide(config.guide);
  const spec = parseLlmSpec(config.llm);
  const retry = {
    initialInterval: config.retry.initialIntervalMs,
    backoffCoefficient: config.retry.backoffCoefficient,
    maximumInterval: config.retry.maximumIntervalMs,
    maximumAttempts: config.retry.maximumAttempts,
  };
  const llmOptions: ActivityOptions = {
    // Configs recorded before llmTimeoutMs existed keep the old 10 minutes.
    startToCloseTimeout: safety.llmTimeoutMs ?? '10 minutes',
    heartbeatTimeout: '10 seconds',
    retry,
    // Wait for the activity to acknowledge a cancellation, so the history proves it stopped.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
  const toolOptions: ActivityOptions = { ...llmOptions, startToCloseTimeout: safety.toolTimeoutMs };
  const { llm, tool } = proxyActivities<Activities>(llmOptions);

  const cp: TaskCheckpoint = input.checkpoint ?? {
    messages: [
      { role: 'system', text: guide.systemPrompt(config) },
      { role: 'user', text: input.goal },
    ],
    ticks: 0,
    callNumber: 0,
    tokensUsed: 0,
    toolCalls: [],
    injections: [],
    verifyAsked: false,
  };
  let counters = input.counters;
  let runTokens = 0;
  let halted = false;
  let lastErrorCode: string | undefined;
  let scope: CancellationScope | undefined;
  const inbox: HumanMessage[] = [...(input.messages ?? [])];
  const allowanceStart = cp.ticks;

  // The halt works whatever its payload; a message is checked like at the agent, and bounded per run.
  setHandler(haltSignal, () => {
    halted = true;
    scope?.cancel();
  }, { description: 'Stop this task now (sent by its agent on SYSTEM_HALT): cancels the call in flight.' });
  let received = 0;
  setHandler(
    messageSignal,
    (raw) => {
      const m = HumanMessageSchema.safeParse(raw);
      if (!m.success || received >= LIMITS.messagesPerRun) {
        log.warn('ignored a message signal', { reason: m.success ? `more than ${LIMITS.messagesPerRun} this run` : m.error.message });
        return;
      }
      received++;
      inbox.push(m.data);
    },
    { description: 'A human follow-up {text, by?} (sent by its agent): appended before the next LLM call.' },
  );
  setHandler(taskStateQuery, (): TaskStatus => ({ ...resultSoFar(), running: true, halted, counters, ...(lastErrorCode ? { lastErrorCode } : {}) }), {
    description: 'The task so far: ticks, tokens, tool calls, injections, counters.',
  });

  function resultSoFar(): Omit<TaskResult, 'outcome' | 'agentState'> {
    return { agentId, taskId, workflowId: workflowInfo().workflowId, ticks: cp.ticks, tokensUsed: cp.tokensUsed, toolCalls: cp.toolCalls, injections: cp.injections };
  }

  /** Run an activity so that SYSTEM_HALT can cancel it. */
  async function cancellable<T>(fn: () => Promise<T>): Promise<T> {
    scope = new CancellationScope();
    try {
      return await scope.run(fn);
    } finally {
      scope = undefined;
    }
  }

  const finish = (outcome: TaskOutcome, agentState: AgentState, extra: Partial<TaskResult> = {}, lock?: LockVerdict): TaskWorkflowOutput => {
    // Bounded, so a task's completion never passes Temporal's 2 MB payload limit.
    const result = fitResult({ ...resultSoFar(), outcome, agentState, ...extra, ...(lock ? { reason: lock.reason } : {}) }, LIMITS.taskResultBytes);
    const out: TaskWorkflowOutput = { result, counters, runTokens };
    if (lock) out.lock = lock;
    // A resumed task sees only the anchored head and the window again, so that is all it carries.
    if (outcome === 'SUSPENDED') out.checkpoint = { ...cp, messages: assembleContext({ messages: cp.messages, window: config.contextWindow }) };
    if (inbox.length) out.undelivered = inbox.splice(0);
    report(agentState, result.reason?.code, true);
    if (outcome === 'FAILED') {
      // The workflow itself fails (red in the Web UI), carrying the transcript to the agent.
      throw ApplicationFailure.create({ type: TASK_FAILED, message: extra.error?.message ?? 'task failed', nonRetryable: true, details: [out] });
    }
    return out;
  };
  const suspend = (lock: LockVerdict) => finish('SUSPENDED', lock.agentState, {}, lock);
  const cancelled = () =>
    finish('CANCELLED', 'STOPPED', { reason: { code: 'SYSTEM_HALT', message: 'stopped by a human' } });

  /** Live state for the Web UI and the agent's `state` query. */
  function report(agentState: AgentState, lockReason?: string, closing = false): void {
    upsertSearchAttributes([
      { key: AgentIdKey, value: agentId },
      // A closed task drops AgentState, so `AgentState="SAFETY_LOCKOUT"` never lists tasks of agents
      // that were unlocked since: the agent workflow carries its live state.
      { key: AgentStateKey, value: closing ? null : agentState },
      { key: TickIndexKey, value: cp.ticks },
      { key: TokensUsedKey, value: cp.tokensUsed },
      ...(lastErrorCode ? [{ key: LastErrorCodeKey, value: lastErrorCode }] : []),
      ...(lockReason ? [{ key: LockReasonKey, value: lockReason }] : []),
    ]);
    const last = cp.toolCalls.at(-1);
    setCurrentDetails(
      [
        `### Task ${taskId} · ${agentState}`,
        `- tick **${cp.ticks}** (cap ${safety.maxTicks}) · tokens **${input.agentTokensUsed + runTokens}** / ${safety.tokenBudget}`,
        `- consecutive failures **${counters.consecutiveFailures}** · window ${counters.window.join(' ') || '—'}`,
        last ? `- last tool: \`${last.name}\` ${last.status}${last.error ? ` (${last.error.code})` : ''}` : '- no tool call yet',
        lockReason ? `- **${lockReason}**` : '',
      ].join('\n'),
    );
  }

  async function sendProgress(): Promise<void> {
    const parent = workflowInfo().parent;
    if (!parent) return;
    try {
      await getExternalWorkflowHandle(parent.workflowId).signal(taskProgressSignal, {
        taskId,
        tick: cp.ticks,
        tokensUsed: cp.tokensUsed,
        runTokens,
        counters,
        ...(lastErrorCode ? { lastErrorCode } : {}),
      });
    } catch (err) {
      // The agent may have closed (halted, continued-as-new): progress is best effort, the result is not.
      if (isCancellation(err)) throw err;
    }
  }

  const painContext = (tick: number, toolName: string, args: unknown): PainContext => ({
    tick,
    toolName,
    args,
    consecutiveFailures: counters.consecutiveFailures,
    workspace: config.workspace,
  });

  const inject = (tick: number, kind: Injection['kind'], text: string) => {
    cp.injections.push({ tick, kind, text });
    cp.messages.push({ role: 'user', text });
  };

  report('EXECUTING');
  for (;;) {
    if (halted) return cancelled();
    // 1. onEventLoopStart: the tick cap, per allowance (unlock --resume grants a fresh one).
    const start = SafetyMonitor.onEventLoopStart(safety, { tick: cp.ticks - allowanceStart + 1 });
    if (start.lock) return suspend(start.lock);
    // Temporal's own limits, before the server would terminate the task with nothing kept.
    const history = historyLimit({ events: workflowInfo().historyLength, bytes: workflowInfo().historySize });
    if (history?.lock) return suspend(history.lock);
    const tick = ++cp.ticks;

    for (const m of inbox.splice(0)) inject(tick, 'MESSAGE', `Message from ${m.by ?? 'a human operator'}: ${m.text}`);

    // 2. Context, with the system prompt and goal anchored. 3. beforeLLMCall: the agent's budget.
    const messages = assembleContext({ messages: cp.messages, window: config.contextWindow });
    // An LLM call's input is one payload: past Temporal's limit it could not even be scheduled.
    const contextBytes = jsonBytes(messages);
    if (contextBytes > LIMITS.llmInputBytes) {
      const error = normalizedError({
        code: 'E_OUTPUT_TOO_LARGE',
        kind: 'execution',
        source: 'task context',
        message: `the context of tick ${tick} is ${Math.ceil(contextBytes / 1000)} KB, more than the ${LIMITS.llmInputBytes / 1000} KB an LLM call may carry (Temporal's payload limit is 2 MB): lower contextWindow or tools.maxOutputBytes and submit again`,
      });
      return finish('FAILED', 'WAITING_FOR_EVENT', { error });
    }
    const budget = SafetyMonitor.beforeLLMCall(safety, { tokensUsed: input.agentTokensUsed + runTokens });
    if (budget.lock) return suspend(budget.lock);

    // 4. The LLM call.
    const callNumber = ++cp.callNumber;
    let response: LlmResponse;
    try {
      response = await cancellable(() =>
        llm.executeWithOptions({ ...llmOptions, summary: `llm ${llmLabel(spec)} · tick ${tick}` }, [
          { llm: config.llm, agentId, taskId, callNumber, tick, messages, tools: toolSpecs(), maxOutputTokens: budget.maxOutputTokens, maxRetryDelayMs: config.retry.maximumIntervalMs },
        ]),
      );
    } catch (err) {
      if (halted && isCancellation(err)) return cancelled();
      // A retryable LLM error that ran out of attempts is still the provider's error, as it was.
      const { error } = factsOf(err, `llm ${spec.provider}`);
      lastErrorCode = error.code;
      // The controller cannot feel pain about itself: its failure ends the task.
      if (error.kind === 'fatal') {
        return finish('FAILED', 'ERROR_PAUSED', { error }, { agentState: 'ERROR_PAUSED', reason: { code: 'FATAL', message: `${error.code}: ${error.message}` }, raiseAlert: true });
      }
      return finish('FAILED', 'WAITING_FOR_EVENT', { error });
    }
    const used = response.usage.inputTokens + response.usage.outputTokens;
    runTokens += used;
    cp.tokensUsed += used;
    cp.messages.push({
      role: 'assistant',
      ...(response.text !== undefined ? { text: response.text } : {}),
      ...(response.toolCalls.length ? { toolCalls: response.toolCalls } : {}),
      ...(response.providerParts ? { providerParts: response.providerParts } : {}),
    });

    // 6. No tool call: the final answer (after one verification round when configured).
    if (response.toolCalls.length === 0) {
      if (config.verify && !cp.verifyAsked) {
        cp.verifyAsked = true;
        inject(tick, 'VERIFY', verifyText(input.goal));
        await sendProgress();
        continue;
      }
      return finish('COMPLETED', 'WAITING_FOR_EVENT', response.text !== undefined ? { finalText: response.text } : {});
    }

    // 5. Tool calls, in order.
    const alerts: Array<{ kind: Injection['kind']; text: string }> = [];
    let skipReason: string | undefined;
    let lock: LockVerdict | undefined;
    for (const call of response.toolCalls) {
      const args = call.rawArguments !== undefined && call.args === undefined ? call.rawArguments : (call.args ?? {});
      const print = fingerprint(call.name, args);
      const record: ToolCallRecord = { tick, name: call.name, args, fingerprint: print, status: 'ok' };
      if (halted) skipReason = 'SYSTEM_HALT: stopped by a human before this call started';
      if (skipReason) {
        record.status = 'skipped';
        record.error = normalizedError({ code: 'E_SKIPPED', kind: 'execution', source: call.name, message: skipReason });
        cp.toolCalls.push(record);
        cp.messages.push({ role: 'tool', callId: call.id, name: call.name, text: skippedText(skipReason) });
        continue;
      }

      const checked = validateToolCall(call);
      let result: ToolExecutionResult;
      if (!checked.ok) {
        result = failure(checked.error);
      } else {
        record.args = checked.args;
        try {
          result = await cancellable(() =>
            tool.executeWithOptions({ ...toolOptions, summary: `tool ${call.name} ${toolTarget(checked.args)}`.trim() }, [
              { name: call.name, args: checked.args, tick, workspace: config.workspace, tools: config.tools, toolTimeoutMs: safety.toolTimeoutMs, maxRetryDelayMs: config.retry.maximumIntervalMs },
            ]),
          );
        } catch (err) {
          if (halted && isCancellation(err)) {
            record.status = 'skipped';
            record.error = normalizedError({ code: 'E_SKIPPED', kind: 'execution', source: call.name, message: 'SYSTEM_HALT: cancelled while running' });
            cp.toolCalls.push(record);
            cp.messages.push({ role: 'tool', callId: call.id, name: call.name, text: skippedText(record.error.message) });
            // The turn's remaining calls are recorded as skipped (none starts); the task ends after the loop.
            continue;
          }
          const { error, retriesExhausted } = factsOf(err, call.name);
          if (error.kind === 'fatal') {
            lastErrorCode = error.code;
            record.status = 'failed';
            record.error = error;
            cp.toolCalls.push(record);
            return finish('FAILED', 'ERROR_PAUSED', { error }, { agentState: 'ERROR_PAUSED', reason: { code: 'FATAL', message: `${error.code}: ${error.message}` }, raiseAlert: true });
          }
          // Transient retries ran out: the tool's failure becomes execution pain, with the history.
          result = failure({ ...error, kind: 'execution', suggestion: retryHistory(error, config.retry, retriesExhausted) });
        }
      }

      // afterToolExecution, then append: the pain text sees the counters with this failure in them.
      const verdict = SafetyMonitor.afterToolExecution(safety, counters, { toolName: call.name, fingerprint: print, success: result.success });
      counters = verdict.counters;
      let text: string;
      if (result.success) {
        text = toolResultText(result.data);
      } else {
        const error = result.error as NormalizedError;
        lastErrorCode = error.code;
        record.status = 'failed';
        record.error = error;
        text = guide.interpretPain(error, painContext(tick, call.name, record.args));
        cp.injections.push({ tick, kind: 'PAIN', text });
      }
      cp.toolCalls.push(record);
      cp.messages.push({ role: 'tool', callId: call.id, name: call.name, text });

      for (const alert of verdict.alerts) alerts.push({ kind: alert.kind, text: guide.interpretAlert(alert, painContext(tick, call.name, record.args)) });
      if (verdict.lock) {
        lock = verdict.lock;
        skipReason = `${lock.reason.code}: the agent was locked before this call started`;
      } else if (verdict.skipRest) {
        skipReason = 'frustration intervention: the rest of this turn was skipped';
      }
    }
    // Alerts go after the turn's tool results, so the provider message order stays valid; frustration
    // comes first (the seeds: it is injected before anything else the turn raised).
    for (const a of frustrationFirst(alerts)) inject(tick, a.kind, a.text);
    if (lock) return suspend(lock);
    if (halted) return cancelled();
    report('EXECUTING');
    await sendProgress();
  }
}


/** The main argument of a tool call, for the activity summary in the Web UI. */
function toolTarget(args: unknown): string {
  const a = args as Record<string, unknown> | undefined;
  const v = a?.path ?? a?.command ?? a?.url ?? '';
  return typeof v === 'string' ? v.slice(0, 80) : '';
}
