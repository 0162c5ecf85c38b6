import { parseAgentConfig, type AgentConfigInput } from './config';
import { LIMITS, TaskProgressSchema, TaskResultSchema, TaskStatusSchema } from './contract';
import { failure, normalizedError } from './errors';
import type { LlmCallInput, LlmResponse, LlmToolCall } from './llm';
import { initialCounters } from './safety-counters';
import { HISTORY_LIMITS } from './safety-rungs';
import { CARRIED_RECORDS, TaskRun, type TaskEnd, type TaskRunInput } from './task-run';
import { toolSpecs } from './tools';
import type { TaskCheckpoint } from './types';

const QUIET = { events: 10, bytes: 1000 };

/** A run of a task with the given config (scripted controller) and input overrides. */
function runOf(config: AgentConfigInput = {}, over: Partial<TaskRunInput> = {}): TaskRun {
  return new TaskRun(
    {
      agentId: 'a1',
      taskId: 'task-1',
      goal: 'read notes.md',
      config: parseAgentConfig(config, 'scripted:x.json'),
      counters: initialCounters(),
      agentTokensUsed: 0,
      ...over,
    },
    'agent-a1-task-1',
  );
}

const answer = (toolCalls: LlmToolCall[], text?: string): LlmResponse => ({
  ...(text !== undefined ? { text } : {}),
  toolCalls,
  usage: { inputTokens: 10, outputTokens: 5 },
});
const read = (id: string, path = 'notes.md'): LlmToolCall => ({ id, name: 'fs.read', args: { path } });
/** A call that fails validation (unknown tool): a failure without any activity, its fingerprint fixed by `arg`. */
const bad = (id: string, arg = 'same'): LlmToolCall => ({ id, name: 'fs.nope', args: { arg } });

/** Start a tick and answer its LLM call with `calls`; returns the calls to run. */
function tickWith(run: TaskRun, calls: LlmToolCall[]): LlmToolCall[] {
  expect(run.startTick(QUIET)).toBeUndefined();
  const call = run.llmCall();
  if ('end' in call) throw new Error(`ended: ${JSON.stringify(call.end)}`);
  const next = run.llmAnswered(answer(calls));
  if (!('calls' in next)) throw new Error(`no calls: ${JSON.stringify(next)}`);
  return next.calls;
}

/** Run a turn in which every valid call succeeds with `data`; returns how the turn ended. */
function turn(run: TaskRun, calls: LlmToolCall[], data: unknown = 'ok'): TaskEnd | undefined {
  for (const c of tickWith(run, calls)) {
    const step = run.beforeTool(c);
    if (step.run) run.afterTool(step.pending, { success: true, data });
  }
  return run.endTurn();
}

describe('TaskRun: a tick', () => {
  it('starts from the anchored system prompt and goal, counts the tick and asks the LLM with every tool', () => {
    const run = runOf();
    expect(run.checkpoint.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(run.checkpoint.messages[1]).toEqual({ role: 'user', text: 'read notes.md' });
    expect(run.startTick(QUIET)).toBeUndefined();
    const call = run.llmCall();
    expect('request' in call && call.request).toMatchObject({
      llm: { provider: 'scripted', file: 'x.json' },
      agentId: 'a1',
      taskId: 'task-1',
      callNumber: 1,
      tick: 1,
      maxOutputTokens: 8192,
      maxRetryDelayMs: 30_000,
    });
    expect('request' in call && call.request.tools?.map((t) => t.name)).toEqual([
      'fs.read',
      'fs.write',
      'fs.list',
      'shell.run',
      'http.get',
    ]);
    expect(run.checkpoint.ticks).toBe(1);
  });

  it('shows waiting human messages at the start of the next tick, in order', () => {
    const run = runOf({}, { messages: [{ text: 'first' }] });
    expect(run.receive({ text: 'use v2', by: 'ana' })).toBeUndefined();
    run.startTick(QUIET);
    expect(run.checkpoint.injections).toEqual([
      { tick: 1, kind: 'MESSAGE', text: 'Message from a human operator: first' },
      { tick: 1, kind: 'MESSAGE', text: 'Message from ana: use v2' },
    ]);
    expect(run.checkpoint.messages.at(-1)).toEqual({ role: 'user', text: 'Message from ana: use v2' });
  });

  it('refuses a malformed message and more than the per-run limit, saying why', () => {
    const run = runOf();
    expect(run.receive({ text: 42 })).toMatch(/text/);
    for (let i = 0; i < LIMITS.messagesPerRun; i++) expect(run.receive({ text: `m${i}` })).toBeUndefined();
    expect(run.receive({ text: 'one too many' })).toBe(`more than ${LIMITS.messagesPerRun} this run`);
  });

  it('suspends at the loop cap, counting ticks from the start of the allowance (a resume gets a fresh one)', () => {
    const run = runOf({ safety: { maxTicks: 1 } });
    expect(turn(run, [read('c1')])).toBeUndefined();
    const end = run.startTick(QUIET);
    expect(end).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'SAFETY_LOCKOUT',
      lock: { reason: { code: 'LOOP_CAP' } },
    });
    const resumed = runOf({ safety: { maxTicks: 1 } }, { checkpoint: run.close(end!).checkpoint! });
    expect(resumed.startTick(QUIET)).toBeUndefined();
    expect(resumed.checkpoint.ticks).toBe(2);
  });

  it("suspends near Temporal's history limits, before the server would terminate the task", () => {
    expect(runOf().startTick({ events: HISTORY_LIMITS.events, bytes: 0 })).toMatchObject({
      outcome: 'SUSPENDED',
      lock: { reason: { code: 'HISTORY_LIMIT' } },
    });
  });

  it('is cancelled at the next tick after a halt', () => {
    const run = runOf();
    run.halt();
    expect(run.startTick(QUIET)).toEqual({
      outcome: 'CANCELLED',
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT', message: 'stopped by a human' },
    });
  });

  it('stops before the LLM call when the agent has used its budget, and caps the output to what is left', () => {
    const spent = runOf({ safety: { tokenBudget: 1000 } }, { agentTokensUsed: 1000 });
    spent.startTick(QUIET);
    expect(spent.llmCall()).toMatchObject({
      end: { outcome: 'SUSPENDED', agentState: 'STOPPED', lock: { reason: { code: 'BUDGET_EXHAUSTED' } } },
    });
    const low = runOf({ safety: { tokenBudget: 1000 } }, { agentTokensUsed: 900 });
    low.startTick(QUIET);
    expect(low.llmCall()).toMatchObject({ request: { maxOutputTokens: 100 } });
  });

  it('fails with E_OUTPUT_TOO_LARGE when the context cannot be one LLM payload', () => {
    const run = runOf({}, { goal: 'x'.repeat(LIMITS.llmInputBytes) });
    run.startTick(QUIET);
    expect(run.llmCall()).toMatchObject({
      end: {
        outcome: 'FAILED',
        agentState: 'WAITING_FOR_EVENT',
        error: { code: 'E_OUTPUT_TOO_LARGE', kind: 'execution' },
      },
    });
  });

  it('counts every call’s tokens, for the run and for the task', () => {
    const run = runOf();
    turn(run, [read('c1')]);
    turn(run, [read('c2')]);
    expect(run.runTokens).toBe(30);
    expect(run.checkpoint.tokensUsed).toBe(30);
    expect(run.progress()).toMatchObject({ tick: 2, tokensUsed: 30, runTokens: 30 });
  });
});

describe('TaskRun: the final answer', () => {
  it('asks for verification once before accepting a final answer (the default), then completes', () => {
    const run = runOf();
    run.startTick(QUIET);
    run.llmCall();
    expect(run.llmAnswered(answer([], 'done'))).toEqual({ verify: true });
    expect(run.checkpoint.injections).toEqual([expect.objectContaining({ tick: 1, kind: 'VERIFY' })]);
    run.startTick(QUIET);
    run.llmCall();
    expect(run.llmAnswered(answer([], 'verified'))).toEqual({
      end: { outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', finalText: 'verified' },
    });
  });

  it('verifies a final answer given at the loop cap’s last tick and completes: the verification round is not what trips the cap', () => {
    const run = runOf({ safety: { maxTicks: 2 } });
    turn(run, [read('c1')]);
    run.startTick(QUIET);
    run.llmCall();
    expect(run.llmAnswered(answer([], 'done'))).toEqual({ verify: true });
    expect(run.startTick(QUIET)).toBeUndefined();
    run.llmCall();
    expect(run.llmAnswered(answer([], 'verified'))).toEqual({
      end: { outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', finalText: 'verified' },
    });
  });

  it('still stops at the cap when the model answers the verification with more tool calls', () => {
    const run = runOf({ safety: { maxTicks: 2 } });
    turn(run, [read('c1')]);
    run.startTick(QUIET);
    run.llmCall();
    run.llmAnswered(answer([], 'done'));
    run.startTick(QUIET);
    run.llmCall();
    const next = run.llmAnswered(answer([read('c2')]));
    if (!('calls' in next)) throw new Error('expected tool calls');
    const step = run.beforeTool(next.calls[0]!);
    if (step.run) run.afterTool(step.pending, { success: true, data: 'ok' });
    run.endTurn();
    expect(run.startTick(QUIET)).toMatchObject({ outcome: 'SUSPENDED', lock: { reason: { code: 'LOOP_CAP' } } });
  });

  it('completes at once when verification is off', () => {
    const run = runOf({ verify: false });
    run.startTick(QUIET);
    run.llmCall();
    expect(run.llmAnswered(answer([], 'done'))).toEqual({
      end: { outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', finalText: 'done' },
    });
  });

  it('keeps the assistant turn as the model gave it, provider parts included', () => {
    const run = runOf();
    run.startTick(QUIET);
    run.llmCall();
    run.llmAnswered({ ...answer([read('c1')], 'reading'), providerParts: [{ thoughtSignature: 's' }] });
    expect(run.checkpoint.messages.at(-1)).toEqual({
      role: 'assistant',
      text: 'reading',
      toolCalls: [read('c1')],
      providerParts: [{ thoughtSignature: 's' }],
    });
  });
});

describe('TaskRun: tool calls', () => {
  it('runs a valid call with its checked arguments and the summary of what it acts on', () => {
    const run = runOf();
    const [c] = tickWith(run, [{ id: 'c1', name: 'fs.read', rawArguments: '{"path":"notes.md"}' }]);
    const step = run.beforeTool(c!);
    expect(step).toMatchObject({ run: true, args: { path: 'notes.md' }, summary: 'tool fs.read notes.md' });
    if (step.run) run.afterTool(step.pending, { success: true, data: { text: 'hi' } });
    expect(run.checkpoint.toolCalls).toEqual([
      expect.objectContaining({ tick: 1, name: 'fs.read', args: { path: 'notes.md' }, status: 'ok' }),
    ]);
    expect(run.checkpoint.messages.at(-1)).toEqual({
      role: 'tool',
      callId: 'c1',
      name: 'fs.read',
      text: '{"text":"hi"}',
    });
    expect(run.counters.window).toEqual(['ok']);
  });

  it('records a malformed call as pain without running it', () => {
    const run = runOf();
    const [c] = tickWith(run, [bad('c1')]);
    expect(run.beforeTool(c!)).toEqual({ run: false });
    expect(run.checkpoint.toolCalls[0]).toMatchObject({ status: 'failed', error: { code: 'E_UNKNOWN_TOOL' } });
    expect(run.checkpoint.injections).toEqual([expect.objectContaining({ kind: 'PAIN' })]);
    expect(run.lastErrorCode).toBe('E_UNKNOWN_TOOL');
    expect(run.counters.consecutiveFailures).toBe(1);
  });

  it("gives the guide the counters with this failure in them: a first failure is 'consecutive failures: 1'", () => {
    const run = runOf({ guide: 'debugging' });
    const [c] = tickWith(run, [bad('c1')]);
    run.beforeTool(c!);
    expect(run.checkpoint.injections[0]?.text).toContain('consecutive failures: 1');
  });

  it('injects the turn’s alerts after its tool results, frustration first even when a repeat alert came earlier', () => {
    // A,A,A (REPEAT_ALERT on the 3rd), B, C (FRUSTRATION on the 5th consecutive failure).
    const run = runOf();
    for (const c of tickWith(run, [bad('1'), bad('2'), bad('3'), bad('4', 'b'), bad('5', 'c')])) run.beforeTool(c);
    const roles = run.checkpoint.messages.slice(3).map((m) => m.role);
    expect(roles).toEqual(['tool', 'tool', 'tool', 'tool', 'tool']);
    expect(run.endTurn()).toBeUndefined();
    expect(run.checkpoint.injections.map((i) => i.kind)).toEqual([
      'PAIN',
      'PAIN',
      'PAIN',
      'PAIN',
      'PAIN',
      'FRUSTRATION',
      'REPEAT_ALERT',
    ]);
    expect(run.checkpoint.messages.slice(-2).map((m) => m.role)).toEqual(['user', 'user']);
  });

  it('skips the rest of the turn after a frustration intervention, without counting the skipped calls', () => {
    const run = runOf({ safety: { frustrationThreshold: 2 } });
    const calls = tickWith(run, [bad('1', 'a'), bad('2', 'b'), read('3')]);
    expect(calls.map((c) => run.beforeTool(c).run)).toEqual([false, false, false]);
    expect(run.checkpoint.toolCalls.map((r) => r.status)).toEqual(['failed', 'failed', 'skipped']);
    expect(run.checkpoint.toolCalls[2]?.error?.message).toBe(
      'frustration intervention: the rest of this turn was skipped',
    );
    expect(run.counters.window).toEqual(['failed', 'failed']);
    expect(run.endTurn()).toBeUndefined();
  });

  it('locks on the 4th identical failure of one turn, skips the rest and suspends at the end of the turn', () => {
    const run = runOf();
    for (const c of tickWith(run, [bad('1'), bad('2'), bad('3'), bad('4'), read('5')])) run.beforeTool(c);
    expect(run.checkpoint.toolCalls.map((r) => r.status)).toEqual(['failed', 'failed', 'failed', 'failed', 'skipped']);
    expect(run.checkpoint.toolCalls[4]?.error?.message).toBe(
      'REPEATED_FAILURE: the agent was locked before this call started',
    );
    const end = run.endTurn();
    expect(end).toMatchObject({
      outcome: 'SUSPENDED',
      agentState: 'SAFETY_LOCKOUT',
      lock: { reason: { code: 'REPEATED_FAILURE' } },
    });
    expect(run.checkpoint.injections.filter((i) => i.kind === 'REPEAT_ALERT')).toHaveLength(1);
    expect(run.close(end!).result.reason?.code).toBe('REPEATED_FAILURE');
  });

  it('skips the calls after a halt and ends the turn cancelled', () => {
    const run = runOf();
    const [a, b] = tickWith(run, [read('1'), read('2')]);
    const step = run.beforeTool(a!);
    run.halt();
    if (step.run) run.toolCancelled(step.pending);
    expect(run.beforeTool(b!)).toEqual({ run: false });
    expect(run.checkpoint.toolCalls.map((r) => [r.status, r.error?.message])).toEqual([
      ['skipped', 'SYSTEM_HALT: cancelled while running'],
      ['skipped', 'SYSTEM_HALT: stopped by a human before this call started'],
    ]);
    expect(run.checkpoint.messages.at(-1)).toEqual({
      role: 'tool',
      callId: '2',
      name: 'fs.read',
      text: 'Not executed: SYSTEM_HALT: stopped by a human before this call started.',
    });
    expect(run.endTurn()).toMatchObject({ outcome: 'CANCELLED', agentState: 'STOPPED' });
  });

  it('turns a transient failure whose retries ran out into execution pain that carries the retry history', () => {
    const run = runOf();
    const [c] = tickWith(run, [{ id: '1', name: 'http.get', args: { url: 'http://x.test/' } }]);
    const step = run.beforeTool(c!);
    if (!step.run) throw new Error('should run');
    const error = normalizedError({ code: 'ECONNRESET', message: 'socket hang up', source: 'http.get' });
    expect(run.toolFailed(step.pending, { error, retriesExhausted: true })).toBeUndefined();
    expect(run.checkpoint.toolCalls[0]?.error).toMatchObject({
      code: 'ECONNRESET',
      kind: 'execution',
      suggestion: expect.stringContaining('Tried 5 times'),
    });
    expect(run.counters.consecutiveFailures).toBe(1);
  });

  it('records an execution error that failed its activity exactly like one returned as data', () => {
    const error = normalizedError({ code: 'EPERM', message: 'outside the workspace', source: 'fs.read' });
    const [thrown, returned] = [runOf(), runOf()];
    for (const run of [thrown, returned]) {
      const [c] = tickWith(run, [read('1')]);
      const step = run.beforeTool(c!);
      if (!step.run) throw new Error('should run');
      if (run === thrown) expect(run.toolFailed(step.pending, { error, retriesExhausted: false })).toBeUndefined();
      else run.afterTool(step.pending, failure(error));
    }
    expect(thrown.checkpoint).toEqual(returned.checkpoint);
    expect(thrown.counters).toEqual(returned.counters);
    expect(thrown.checkpoint.toolCalls[0]).toMatchObject({
      status: 'failed',
      error: { code: 'EPERM', kind: 'execution' },
    });
  });

  it('fails the task on a fatal tool error: ERROR_PAUSED, FATAL, alert', () => {
    const run = runOf();
    const [c] = tickWith(run, [read('1')]);
    const step = run.beforeTool(c!);
    if (!step.run) throw new Error('should run');
    const error = normalizedError({ code: 'ENOMEM', message: 'out of memory', source: 'fs.read' });
    const end = run.toolFailed(step.pending, { error, retriesExhausted: false });
    expect(end).toEqual({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      error,
      lock: {
        agentState: 'ERROR_PAUSED',
        reason: { code: 'FATAL', message: 'ENOMEM: out of memory' },
      },
    });
    expect(run.checkpoint.toolCalls[0]).toMatchObject({ status: 'failed', error: { code: 'ENOMEM' } });
    expect(run.lastErrorCode).toBe('ENOMEM');
  });
});

describe('TaskRun: the LLM failing', () => {
  it('fails the task with the provider’s error, and pauses the agent when it is fatal', () => {
    const transient = normalizedError({ code: 'E_RATE_LIMIT', message: '429', source: 'llm openai' });
    expect(runOf().llmFailed(transient)).toEqual({
      outcome: 'FAILED',
      agentState: 'WAITING_FOR_EVENT',
      error: transient,
    });
    const fatal = normalizedError({ code: 'E_AUTH', message: '401', source: 'llm openai' });
    const run = runOf();
    expect(run.llmFailed(fatal)).toMatchObject({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      lock: { reason: { code: 'FATAL', message: 'E_AUTH: 401' } },
    });
    expect(run.status().lastErrorCode).toBe('E_AUTH');
  });
});

describe('TaskRun: closing', () => {
  it('returns a result that matches the contract, the reason taken from the lock', () => {
    const run = runOf();
    turn(run, [read('1')]);
    const out = run.close({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', finalText: 'done' });
    expect(TaskResultSchema.parse(out.result)).toEqual(out.result);
    expect(out.result).toMatchObject({
      agentId: 'a1',
      taskId: 'task-1',
      workflowId: 'agent-a1-task-1',
      outcome: 'COMPLETED',
      ticks: 1,
      tokensUsed: 15,
      finalText: 'done',
    });
    expect(out).toMatchObject({ runTokens: 15, counters: { window: ['ok'] } });
    expect(out.checkpoint).toBeUndefined();
  });

  it('carries a suspended run’s checkpoint with the anchored head and the window only', () => {
    const run = runOf({ contextWindow: 2 });
    for (let i = 0; i < 3; i++) turn(run, [read(`c${i}`)]);
    const lock = {
      agentState: 'SAFETY_LOCKOUT' as const,
      reason: { code: 'LOOP_CAP' as const, message: 'cap' },
    };
    const { checkpoint, lock: kept } = run.close({ outcome: 'SUSPENDED', agentState: 'SAFETY_LOCKOUT', lock });
    expect(kept).toEqual(lock);
    expect(checkpoint?.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(checkpoint).toMatchObject({ ticks: 3, callNumber: 3, tokensUsed: 45 });
  });

  it('hands back the messages the LLM never saw', () => {
    const run = runOf();
    run.receive({ text: 'too late' });
    expect(run.close(run.cancelled()).undelivered).toEqual([{ text: 'too late' }]);
  });

  it('is plain data: the output survives a JSON round trip unchanged', () => {
    const run = runOf();
    turn(run, [bad('1')]);
    const out = run.close({
      outcome: 'SUSPENDED',
      agentState: 'STOPPED',
      lock: { agentState: 'STOPPED', reason: { code: 'BUDGET_EXHAUSTED', message: 'spent' } },
    });
    expect(JSON.parse(JSON.stringify(out))).toEqual(out);
    const resumed: TaskCheckpoint = JSON.parse(JSON.stringify(out.checkpoint));
    expect(runOf({}, { checkpoint: resumed }).checkpoint).toEqual(out.checkpoint);
  });
});

describe('TaskRun: what it reports', () => {
  it('answers the state query with the full status so far (the contract’s TaskStatus)', () => {
    const run = runOf();
    turn(run, [bad('1')]);
    run.halt();
    const status = run.status();
    expect(TaskStatusSchema.parse(status)).toEqual(status);
    expect(status).toMatchObject({
      running: true,
      halted: true,
      ticks: 1,
      tokensUsed: 15,
      lastErrorCode: 'E_UNKNOWN_TOOL',
      counters: { consecutiveFailures: 1 },
    });
    expect(status.toolCalls).toHaveLength(1);
    expect(status.injections).toHaveLength(1);
  });

  it('reports progress in the contract’s shape', () => {
    const run = runOf();
    turn(run, [read('1')]);
    expect(TaskProgressSchema.parse(run.progress())).toEqual({
      taskId: 'task-1',
      tick: 1,
      tokensUsed: 15,
      runTokens: 15,
      counters: run.counters,
    });
  });

  it('describes the task for the Web UI', () => {
    const run = runOf();
    expect(run.details('EXECUTING')).toContain('- no tool call yet');
    turn(run, [bad('1')]);
    const details = run.details('SAFETY_LOCKOUT', 'LOOP_CAP');
    expect(details).toContain('### Task task-1 · SAFETY_LOCKOUT');
    expect(details).toContain('tokens **15** / 100000');
    expect(details).toContain('- last tool: `fs.nope` failed (E_UNKNOWN_TOOL)');
    expect(details).toContain('- **LOOP_CAP**');
    expect(details).not.toContain('waiting for a human');
  });

  it('says on a suspended task’s page that it waits for a human, and how to resume it', () => {
    const run = runOf();
    turn(run, [bad('1')]);
    const details = run.details('SAFETY_LOCKOUT', 'LOOP_CAP', 'SUSPENDED');
    expect(details).toContain('### Task task-1 · SUSPENDED · agent SAFETY_LOCKOUT');
    expect(details).toContain('**suspended, waiting for a human**: `starry unlock a1 --resume` continues it');
    expect(run.details('WAITING_FOR_EVENT', undefined, 'COMPLETED')).not.toContain('waiting for a human');
  });
});

describe('TaskRun: the transcript in the store', () => {
  const storeRun = (config: AgentConfigInput = {}, over: Partial<TaskRunInput> = {}) =>
    new TaskRun(runOf(config, over).input, 'agent-a1-task-1', { store: true });
  /** Answer the tick's call as the LLM activity does with a store: the answer and the context's manifest stored. */
  function storedTick(run: TaskRun, n: number, calls: LlmToolCall[]): { request: LlmCallInput; calls: LlmToolCall[] } {
    expect(run.startTick(QUIET)).toBeUndefined();
    const call = run.llmCall();
    if ('end' in call) throw new Error('ended');
    const next = run.llmAnswered({
      ...answer(calls),
      message: { role: 'assistant', ref: `answer-${n}`, bytes: 300 },
      context: { ref: `manifest-${n}`, sentBytes: 8000 },
    });
    return { request: call.request, calls: 'calls' in next ? next.calls : [] };
  }
  const storedResult = (n: number, bytes = 2000) => ({
    success: true,
    message: { role: 'tool' as const, ref: `result-${n}`, bytes },
  });

  it('sends the head and the tools once, then only what came after the last call, by reference', () => {
    const run = storeRun();
    const first = storedTick(run, 1, [read('c1')]);
    expect(first.request.messages).toBeUndefined();
    expect(first.request.tools?.map((t) => t.name)).toContain('fs.read');
    expect(first.request.context).toEqual({
      head: [expect.objectContaining({ role: 'system' }), { role: 'user', text: 'read notes.md' }],
      drop: 0,
      append: [],
    });
    const step = run.beforeTool(first.calls[0] as LlmToolCall);
    if (!step.run) throw new Error('not run');
    run.afterTool(step.pending, storedResult(1));
    run.endTurn();

    const second = storedTick(run, 2, [bad('c2')]);
    expect(second.request.tools).toBeUndefined();
    expect(second.request.context).toEqual({
      base: 'manifest-1',
      drop: 0,
      append: [{ role: 'tool', ref: 'result-1', bytes: 2000 }],
    });
    run.beforeTool(second.calls[0] as LlmToolCall); // invalid: pain, written inline by the workflow
    run.endTurn();
    const third = storedTick(run, 3, []);
    expect(third.request.context?.base).toBe('manifest-2');
    expect(third.request.context?.append).toEqual([
      expect.objectContaining({ role: 'tool', text: expect.stringContaining('E_UNKNOWN_TOOL') }),
    ]);
    // The calibration: 8,000 bytes sent for 10 input tokens is off the scale, kept at 6.
    expect(run.checkpoint.bytesPerToken).toBe(6);
  });

  it('drops from the base what the window no longer holds, and keeps only the head and the window itself', () => {
    const run = storeRun({ contextWindow: 4, context: { strategy: 'window' } });
    for (let n = 1; n <= 6; n++) {
      const { request, calls } = storedTick(run, n, [read(`c${n}`)]);
      if (n > 3) expect(request.context?.drop).toBe(2);
      const step = run.beforeTool(calls[0] as LlmToolCall);
      if (step.run) run.afterTool(step.pending, storedResult(n));
      run.endTurn();
    }
    // Head + the last call's window of 4 + its answer + this turn's result: it does not grow with the ticks.
    expect(run.checkpoint.messages).toHaveLength(2 + 4 + 1 + 1);
    expect(run.checkpoint.sent).toEqual({ ref: 'manifest-6', from: 2, to: run.checkpoint.messages.length - 1 });
    expect(run.transcript()).toEqual({
      manifest: 'manifest-6',
      tail: [{ role: 'tool', ref: 'result-6', bytes: 2000 }],
    });
  });

  /** Run `ticks` ticks of one fs.read call each, 1 KB results; each tick's request. */
  function readTicks(run: TaskRun, ticks: number, from = 1): LlmCallInput[] {
    const requests: LlmCallInput[] = [];
    for (let n = from; n < from + ticks; n++) {
      const { request, calls } = storedTick(run, n, [read(`c${n}`)]);
      requests.push(request);
      const step = run.beforeTool(calls[0] as LlmToolCall);
      if (step.run) run.afterTool(step.pending, storedResult(n, 1000));
      run.endTurn();
    }
    return requests;
  }

  it('by default (prefix) appends to the last context while it fits, then drops a large block at once', () => {
    const run = storeRun({ contextTokens: 4000 });
    const drops = readTicks(run, 40).map((r) => r.context?.drop ?? 0);
    const dropping = drops.filter((d) => d > 0);
    // 1.3 KB a turn in 16 KB: most calls append only; the few that drop, drop many turns' entries.
    expect(dropping.length).toBeGreaterThan(0);
    expect(dropping.length).toBeLessThan(drops.length / 4);
    for (const d of dropping) expect(d).toBeGreaterThanOrEqual(8);
    expect(run.summaryDue()).toBeUndefined();
  });

  it('with summarize, asks for a summary of the turns its window drops, then sends it after the head', () => {
    const run = storeRun({ contextTokens: 4000, context: { strategy: 'summarize' } });
    let due: ReturnType<TaskRun['summaryDue']>;
    for (let n = 1; !due; n++) {
      expect(n).toBeLessThan(40);
      if (n > 1) readTicks(run, 1, n - 1);
      expect(run.startTick(QUIET)).toBeUndefined();
      due = run.summaryDue();
      if (!due) {
        // No summary this tick: answer its call like readTicks does.
        const call = run.llmCall();
        if ('end' in call) throw new Error('ended');
        expect(call.request.context?.summary).toBeUndefined();
        run.checkpoint.ticks--; // readTicks starts the tick again
        run.checkpoint.callNumber--;
      }
    }
    // The dropped turns are the oldest ones, from the first call on; their entries follow the head.
    expect(due.entries[0]).toEqual({ role: 'assistant', ref: 'answer-1', bytes: 300 });
    expect(due.covers.entries[0]).toBe(2);
    expect(due.covers.calls[0]).toBe(1);
    expect(due.covers.entries[1] - due.covers.entries[0]).toBe(due.entries.length);
    expect(due.covers.calls[1]).toBe(due.entries.filter((m) => m.role === 'assistant').length);
    // At most a quarter of the 4,000 tokens (less the head): with the half the window keeps, the call fits.
    expect(due.maxOutputTokens).toBeLessThanOrEqual(1000);
    expect(due.maxOutputTokens).toBeGreaterThan(500);
    const tokensBefore = run.checkpoint.tokensUsed;
    run.summarized({
      summary: { message: { role: 'user', ref: 'summary-1', bytes: 400 }, record: 'record-1', covers: due.covers },
      text: 'Read notes.md again and again.',
      usage: { inputTokens: 3000, outputTokens: 100 },
    });
    // Its tokens count against the budget like any call's; the injections say what it covers.
    expect(run.checkpoint.tokensUsed).toBe(tokensBefore + 3100);
    expect(run.checkpoint.injections.at(-1)).toEqual({
      tick: run.checkpoint.ticks,
      kind: 'SUMMARY',
      text: `Summary of calls 1–${due.covers.calls[1]}: Read notes.md again and again.`,
    });
    const call = run.llmCall();
    if ('end' in call) throw new Error('ended');
    expect(call.request.context?.summary).toEqual({
      message: { role: 'user', ref: 'summary-1', bytes: 400 },
      record: 'record-1',
      covers: due.covers,
    });
    expect(call.request.context?.drop).toBe(due.entries.length);
    run.llmAnswered({
      ...answer([]),
      text: 'done',
      message: { role: 'assistant', ref: 'answer-x', bytes: 300 },
      context: { ref: 'manifest-x', sentBytes: 8000 },
    });
    // Sent once: the next delta does not carry it again (its base has it).
    expect(run.checkpoint.summary?.sent).toBe(true);
  });

  it('with summarize, a failed summary leaves the window as prefix would have it and says so', () => {
    const config = { contextTokens: 4000, context: { strategy: 'summarize' } };
    const plain = storeRun({ contextTokens: 4000 });
    const run = storeRun(config);
    for (let n = 1; ; n++) {
      expect(n).toBeLessThan(40);
      expect(run.startTick(QUIET)).toBeUndefined();
      expect(plain.startTick(QUIET)).toBeUndefined();
      const due = run.summaryDue();
      if (due) {
        run.summaryFailed(
          normalizedError({ code: 'E_UNAVAILABLE', kind: 'transient', source: 'llm openai', message: '503' }),
          due,
        );
        expect(run.checkpoint.injections.at(-1)?.text).toMatch(
          /^No summary of calls 1–\d+: the summary call failed \(E_UNAVAILABLE: 503\); they left the context without one\.$/,
        );
        const [a, b] = [run.llmCall(), plain.llmCall()];
        if ('end' in a || 'end' in b) throw new Error('ended');
        expect(a.request.context).toEqual(b.request.context);
        break;
      }
      for (const r of [run, plain]) {
        r.checkpoint.ticks--;
        readTicks(r, 1, n);
      }
    }
  });

  it('fails the task, saying what to do, when the worker has no strategy by the config’s id', () => {
    const run = storeRun({ context: { strategy: 'nowhere' } });
    expect(run.startTick(QUIET)).toBeUndefined();
    const call = run.llmCall();
    expect('end' in call && call.end).toMatchObject({
      outcome: 'FAILED',
      error: {
        code: 'EINVAL',
        message: expect.stringContaining('unknown context strategy "nowhere": use one of prefix'),
      },
    });
  });

  it('asks the tool activity to cut a result to what a small window holds', () => {
    expect(storeRun().resultChars()).toBe(16_000);
    expect(storeRun({ contextTokens: 2000 }).resultChars()).toBeLessThan(4000);
  });

  it('continues as new with everything it counted: tokens, the loop cap allowance, messages taken, counters', () => {
    const run = storeRun({ safety: { maxTicks: 3 } });
    for (let n = 1; n <= 2; n++) {
      const { calls } = storedTick(run, n, [bad(`c${n}`)]);
      run.beforeTool(calls[0] as LlmToolCall);
      run.endTurn();
    }
    expect(run.receive({ text: 'keep going' })).toBeUndefined();
    const next = JSON.parse(JSON.stringify(run.continuation())) as TaskRunInput;
    expect(next.continued).toEqual({
      runTokens: 30,
      allowanceStart: 0,
      received: 1,
      lastErrorCode: 'E_UNKNOWN_TOOL',
      omitted: { toolCalls: 0, injections: 0 },
    });
    expect(next.messages).toEqual([{ text: 'keep going' }]);
    expect(next.counters.consecutiveFailures).toBe(2);
    expect(next.checkpoint?.sent?.ref).toBe('manifest-2');

    const after = new TaskRun(next, 'agent-a1-task-1', { store: true });
    expect(after.runTokens).toBe(30);
    storedTick(after, 3, [bad('c3')]);
    expect(after.checkpoint.injections.at(-1)).toMatchObject({ kind: 'MESSAGE', tick: 3 });
    // The loop cap counts from the task's start, not from the new run: tick 4 is over the cap of 3.
    expect(after.startTick(QUIET)).toMatchObject({ outcome: 'SUSPENDED', lock: { reason: { code: 'LOOP_CAP' } } });
  });

  it('carries at most the newest records into the next run, counting the rest as omitted', () => {
    const run = storeRun({
      safety: {
        maxTicks: 500,
        cascadeErrors: 1000,
        cascadeWindow: 1000,
        frustrationThreshold: 100,
        repeatThreshold: 100,
      },
    });
    for (let n = 1; n <= CARRIED_RECORDS + 10; n++) {
      const { calls } = storedTick(run, n, [read(`c${n}`)]);
      const step = run.beforeTool(calls[0] as LlmToolCall);
      if (step.run) run.afterTool(step.pending, storedResult(n));
      run.endTurn();
    }
    const next = run.continuation();
    expect(next.checkpoint?.toolCalls).toHaveLength(CARRIED_RECORDS);
    expect(next.continued?.omitted).toEqual({ toolCalls: 10, injections: 0 });
    const after = new TaskRun(next, 'agent-a1-task-1', { store: true });
    expect(after.close({ outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT' }).result.omitted).toEqual({
      toolCalls: 10,
      injections: 0,
    });
  });
});

describe('TaskRun: calls that wait for a human', () => {
  const T0 = Date.parse('2026-01-01T00:00:00Z');
  const write = (id: string, path = 'src/a.ts'): LlmToolCall => ({
    id,
    name: 'fs.write',
    args: { path, content: 'x' },
  });
  const decision = (callId: string, over: Record<string, unknown> = {}) => ({
    callId,
    decision: 'approve' as const,
    by: 'alice',
    at: '2026-01-01T00:01:00.000Z',
    ...over,
  });
  const approvalRun = () =>
    runOf({ tools: { approval: { ask: ['fs.write'], deny: ['http.get'], timeoutMs: 60_000 } } });

  it('asks for every call of the turn a rule names, with its id, args, rule and expiry, and none when no rule names it', () => {
    const run = approvalRun();
    const calls = tickWith(run, [read('c1'), write('c2')]);
    expect(run.askApprovals(calls, T0)).toEqual([
      {
        callId: 't1.1',
        taskId: 'task-1',
        workflowId: 'agent-a1-task-1',
        tool: 'fs.write',
        args: { path: 'src/a.ts', content: 'x' },
        tick: 1,
        rule: 'fs.write',
        from: 'config',
        askedAt: '2026-01-01T00:00:00.000Z',
        expiresAt: '2026-01-01T00:01:00.000Z',
      },
    ]);
    expect(run.approvalTimeLeft(T0 + 10_000)).toBe(50_000);
    expect(runOf().askApprovals(tickWith(runOf(), [write('c1')]), T0)).toEqual([]);
  });

  it('runs an approved call with the approver’s edited args, recording who approved and the model’s own args', () => {
    const run = approvalRun();
    const calls = tickWith(run, [write('c1')]);
    run.askApprovals(calls, T0);
    expect(
      run.decide(decision('t1.0', { args: { path: 'src/b.ts', content: 'y' }, note: 'b, not a' })),
    ).toBeUndefined();
    expect(run.waitingApprovals()).toEqual([]);
    const step = run.beforeTool(calls[0]!, 0);
    expect(step).toMatchObject({ run: true, args: { path: 'src/b.ts', content: 'y' } });
    if (step.run) run.afterTool(step.pending, { success: true, data: 'written' });
    expect(run.checkpoint.toolCalls[0]).toMatchObject({
      args: { path: 'src/b.ts', content: 'y' },
      status: 'ok',
      approval: { decision: 'approved', by: 'alice', note: 'b, not a', modelArgs: { path: 'src/a.ts', content: 'x' } },
    });
  });

  it('turns a denial into E_DENIED pain with the human’s reason, counted by the ladder', () => {
    const run = approvalRun();
    const calls = tickWith(run, [write('c1')]);
    run.askApprovals(calls, T0);
    run.decide(decision('t1.0', { decision: 'deny', reason: 'not on main' }));
    expect(run.beforeTool(calls[0]!, 0)).toEqual({ run: false });
    expect(run.checkpoint.toolCalls[0]).toMatchObject({
      status: 'failed',
      error: { code: 'E_DENIED', message: 'alice denied this fs.write call: not on main' },
      approval: { decision: 'denied', by: 'alice', reason: 'not on main' },
    });
    expect(run.counters.consecutiveFailures).toBe(1);
    expect(run.checkpoint.messages.at(-1)).toMatchObject({ role: 'tool', text: expect.stringMatching(/not on main/) });
  });

  it('counts a call nobody decided in time as denied, and refuses a decision that comes after', () => {
    const run = approvalRun();
    const calls = tickWith(run, [write('c1')]);
    run.askApprovals(calls, T0);
    run.expireApprovals(T0 + 59_999);
    expect(run.waitingApprovals()).toHaveLength(1);
    run.expireApprovals(T0 + 60_000);
    expect(run.waitingApprovals()).toEqual([]);
    expect(run.decide(decision('t1.0'))).toBe('call t1.0 expired before the decision arrived');
    run.beforeTool(calls[0]!, 0);
    expect(run.checkpoint.toolCalls[0]).toMatchObject({
      error: { code: 'E_DENIED', message: 'no decision within 60 s: this fs.write call was not run' },
      approval: { decision: 'expired' },
    });
  });

  it('refuses a call a deny rule names without asking, and a decision for a call that does not wait', () => {
    const run = approvalRun();
    const calls = tickWith(run, [{ id: 'c1', name: 'http.get', args: { url: 'https://example.com/' } }]);
    expect(run.askApprovals(calls, T0)).toEqual([]);
    expect(run.decide(decision('t1.0'))).toBe('no call t1.0 waits in this turn');
    expect(run.beforeTool(calls[0]!, 0)).toEqual({ run: false });
    expect(run.checkpoint.toolCalls[0]?.error).toMatchObject({
      code: 'E_DENIED',
      message: expect.stringMatching(/agent's config/),
    });
  });

  it('asks for 20 calls of one turn at most; the others are refused unasked, saying why', () => {
    const run = approvalRun();
    const calls = tickWith(
      run,
      Array.from({ length: 25 }, (_, i) => write(`c${i}`, `src/${i}.ts`)),
    );
    expect(run.askApprovals(calls, T0)).toHaveLength(20);
    run.beforeTool(calls[24]!, 24);
    expect(run.checkpoint.toolCalls[0]?.error?.message).toMatch(/more than 20 calls of one turn waited/);
  });

  it('shows the waiting calls and the commands that decide them in the Web UI details', () => {
    const run = approvalRun();
    run.askApprovals(tickWith(run, [write('c1')]), T0);
    expect(run.details('WAITING_FOR_APPROVAL')).toContain(
      '- **waiting for approval** `t1.0` · `fs.write` {"path":"src/a.ts","content":"x"} (rule fs.write, until 2026-01-01T00:01:00.000Z)\n  - approve: `starry approve a1 t1.0` · deny: `starry deny a1 t1.0 --reason "…"`',
    );
  });

  it('carries the worker’s rules into the next run when it continues as new', () => {
    const run = runOf();
    run.offer(toolSpecs(), undefined, { ask: ['fs.read'], deny: [] });
    expect(run.continuation().workerApproval).toEqual({ ask: ['fs.read'], deny: [] });
    const next = new TaskRun(run.continuation(), 'agent-a1-task-1');
    expect(next.askApprovals(tickWith(next, [read('c1')]), T0)).toHaveLength(1);
  });
});

describe('TaskRun: the facts of its trace', () => {
  /** Two ticks, each with the same EPERM call. */
  const failTwice = (run: TaskRun) => {
    const eperm = normalizedError({ code: 'EPERM', message: 'denied', source: 'fs.read' });
    for (const id of ['c1', 'c2']) {
      const [call] = tickWith(run, [read(id, '/root/secret.txt')]);
      const step = run.beforeTool(call!);
      if (step.run) run.afterTool(step.pending, failure(eperm));
      run.endTurn();
    }
  };

  it('records a failed call as pain, a tripped rung as a breaker and a halt, each drained once', () => {
    const run = runOf({ safety: { repeatThreshold: 2 } });
    failTwice(run);
    run.halt();
    run.halt();
    expect(
      run
        .drainEvents()
        .map((e) => [
          e.name,
          e.attributes['starry.pain.code'] ?? e.attributes['starry.breaker.rung'] ?? e.attributes['starry.tick'],
        ]),
    ).toEqual([
      ['starry.pain', 'EPERM'],
      ['starry.pain', 'EPERM'],
      ['starry.breaker', 'REPEAT_ALERT'],
      ['starry.halt', 2],
    ]);
    expect(run.drainEvents()).toEqual([]);
  });

  it('records the loop cap that suspends a run, with what it counted', () => {
    const run = runOf({ safety: { maxTicks: 1 } });
    turn(run, [read('c1')]);
    run.drainEvents();
    expect(run.startTick(QUIET)?.outcome).toBe('SUSPENDED');
    expect(run.drainEvents().map((e) => e.attributes)).toEqual([
      {
        'starry.breaker.rung': 'LOOP_CAP',
        'starry.breaker.count': 2,
        'starry.breaker.threshold': 1,
        'starry.breaker.state': 'SAFETY_LOCKOUT',
      },
    ]);
  });

  it('counts its ticks, pain, breaker trips, halt and end for the metrics, each drained once', () => {
    const run = runOf({ safety: { repeatThreshold: 2 } });
    failTwice(run);
    run.halt();
    run.close(run.cancelled());
    const counted = run.drainCounts().map((c) => c.metric.name + JSON.stringify(c.attributes));
    expect(counted).toEqual([
      'starry.ticks{}',
      'starry.pain{"starry.pain.code":"EPERM","starry.pain.kind":"execution"}',
      'starry.ticks{}',
      'starry.pain{"starry.pain.code":"EPERM","starry.pain.kind":"execution"}',
      'starry.breaker.trips{"starry.breaker.rung":"REPEAT_ALERT"}',
      'starry.halts{}',
      'starry.tasks{"starry.task.outcome":"CANCELLED"}',
    ]);
    expect(run.drainCounts()).toEqual([]);
  });

  it('counts the lock a run ends in as a lockout, with its reason and the agent state', () => {
    const run = runOf({ safety: { maxTicks: 1 } });
    turn(run, [read('c1')]);
    const end = run.startTick(QUIET)!;
    run.close(end);
    expect(
      run
        .drainCounts()
        .slice(-3)
        .map((c) => [c.metric.name, c.attributes]),
    ).toEqual([
      ['starry.breaker.trips', { 'starry.breaker.rung': 'LOOP_CAP' }],
      ['starry.tasks', { 'starry.task.outcome': 'SUSPENDED' }],
      ['starry.lockouts', { 'starry.lockout.reason': 'LOOP_CAP', 'starry.agent.state': 'SAFETY_LOCKOUT' }],
    ]);
  });

  it("puts the trace id in the task's details once it has one", () => {
    const run = runOf();
    expect(run.details('EXECUTING')).not.toContain('trace');
    run.traceId = '0af7651916cd43dd8448eb211c80319c';
    expect(run.details('EXECUTING')).toContain('- trace `0af7651916cd43dd8448eb211c80319c`');
  });
});
