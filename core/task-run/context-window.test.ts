import type { AgentConfigInput } from '../config';
import type { LlmResponse, ToolSpec } from '../llm';
import { LIMITS } from '../payloads';
import { toolSpecs } from '../tools';
import type { TaskCheckpoint } from '../types';
import { ContextWindow, type CallContext } from './context-window';
import { checkpointOf, configOf, read, roundTrip, textOf } from './test-support';

const tools: ToolSpec[] = toolSpecs(['fs.read']);

/** A window, its task's config and checkpoint. */
function windowOf(store: boolean, input: AgentConfigInput = {}) {
  const config = configOf(input);
  return { window: ContextWindow.of(store), config, cp: checkpointOf(config) };
}
/** The context of a call, which must build. */
function contextOf(window: ContextWindow, cp: TaskCheckpoint, config = configOf()): CallContext {
  const got = window.callContext(cp, config, tools);
  if ('error' in got) throw new Error(got.error.message);
  return got.context;
}
/** The model's answer to call `n`, stored with the call's manifest as the LLM activity does with a store. */
const stored = (n: number): LlmResponse => ({
  toolCalls: [read(`c${n}`)],
  usage: { inputTokens: 2000, outputTokens: 5 },
  message: { role: 'assistant', ref: `answer-${n}`, bytes: 300 },
  context: { ref: `manifest-${n}`, sentBytes: 8000 },
});
/** Store mode: `ticks` calls, each answered and followed by a 1 KB tool result. */
function storedTicks(window: ContextWindow, cp: TaskCheckpoint, config: ReturnType<typeof configOf>, ticks: number) {
  const contexts: CallContext[] = [];
  for (let n = 1; n <= ticks; n++) {
    contexts.push(contextOf(window, cp, config));
    window.answered(cp, stored(n));
    cp.messages.push({ role: 'tool', ref: `result-${n}`, bytes: 1000 });
  }
  return contexts;
}

describe('ContextWindow: its limits', () => {
  it("are the config's, at the checkpoint's calibrated bytes per token, the head anchored", () => {
    const { window, config, cp } = windowOf(false, { contextWindow: 8, contextTokens: 2000 });
    expect(window.limits(cp, config)).toEqual({ maxMessages: 8, maxTokens: 2000, bytesPerToken: 4, anchored: 2 });
    cp.bytesPerToken = 3;
    expect(window.limits(cp, configOf()).bytesPerToken).toBe(3);
    expect(window.limits(cp, configOf()).maxTokens).toBe(64_000);
  });

  it('let each tool result keep less of a small window, and share it among the calls of a turn', () => {
    const { window, config, cp } = windowOf(true);
    expect(window.resultChars(cp, config)).toBe(16_000);
    const small = configOf({ contextTokens: 2000 });
    expect(window.resultChars(cp, small)).toBeLessThan(4000);
    expect(window.resultChars(cp, small, 2)).toBeLessThan(window.resultChars(cp, small, 1));
  });
});

describe('ContextWindow: without the store', () => {
  it('sends the anchored head and the newest messages inline, with the tools', () => {
    const { window, config, cp } = windowOf(false, { contextWindow: 2 });
    for (const text of ['a', 'b', 'c']) cp.messages.push({ role: 'user', text });
    const context = contextOf(window, cp, config);
    expect(context.messages?.map((m) => m.text)).toEqual([textOf(cp.messages[0]), 'read notes.md', 'b', 'c']);
    expect(context.tools).toBe(tools);
  });

  it('fails, saying what to lower, when the context is past what one LLM payload may carry', () => {
    const { window, config, cp } = windowOf(false);
    cp.ticks = 3;
    cp.messages.push({ role: 'user', text: 'x'.repeat(LIMITS.llmInputBytes) });
    expect(window.callContext(cp, config, tools)).toEqual({
      error: expect.objectContaining({
        code: 'E_OUTPUT_TOO_LARGE',
        message: expect.stringMatching(/^the context of tick 3 is \d+ KB.*lower contextWindow/),
      }),
    });
  });
});

describe('ContextWindow: with the store', () => {
  it('sends the head and the tools once, then a delta against the last call’s manifest', () => {
    const { window, config, cp } = windowOf(true);
    const [first, second] = storedTicks(window, cp, config, 2);
    expect(first).toEqual({ context: { head: cp.messages.slice(0, 2), drop: 0, append: [] }, tools });
    expect(second).toEqual({
      context: { base: 'manifest-1', drop: 0, append: [{ role: 'tool', ref: 'result-1', bytes: 1000 }] },
    });
  });

  it('keeps only the head and the last window, records what it left out, and calibrates on what it sent', () => {
    const { window, config, cp } = windowOf(true, { contextWindow: 4, context: { strategy: 'window' } });
    const contexts = storedTicks(window, cp, config, 6);
    expect(contexts.at(-1)?.context?.drop).toBe(2);
    expect(cp.messages).toHaveLength(2 + 4 + 1 + 1); // the head, the window, the answer, its result
    expect(cp.sent).toEqual({ ref: 'manifest-6', from: 2, to: cp.messages.length - 1 });
    expect(cp.trimmed).toEqual({ entries: 12 - 6, calls: 3 }); // 6 turns of 2 entries, 3 of them kept
    expect(cp.bytesPerToken).toBe(4); // 8,000 bytes for 2,000 tokens
  });

  it('plans a summary when the summarize strategy’s window drops turns, and the call then follows that plan', () => {
    const config = configOf({ contextTokens: 4000, context: { strategy: 'summarize' } });
    const window = ContextWindow.of(true);
    const cp = checkpointOf(config);
    let planned;
    for (let n = 1; !planned; n++) {
      expect(n).toBeLessThan(40);
      storedTicks(window, cp, config, 1);
      planned = window.summaryPlan(cp, config);
    }
    expect(planned.summarize).toBe(true);
    const drop = contextOf(window, cp, config).context?.drop;
    expect(drop).toBe(planned.start - 2);
  });

  it('plans no summary without the store, nor with a strategy that never summarizes', () => {
    const { window, config, cp } = windowOf(false, { context: { strategy: 'summarize' } });
    expect(window.summaryPlan(cp, config)).toBeUndefined();
    const store = windowOf(true);
    expect(store.window.summaryPlan(store.cp, store.config)).toBeUndefined();
  });

  it('fails the call, saying what to do, when this worker has no strategy by the config’s id', () => {
    const { window, config, cp } = windowOf(true, { context: { strategy: 'nowhere' } });
    expect(window.callContext(cp, config, tools)).toEqual({
      error: expect.objectContaining({ code: 'EINVAL', suggestion: expect.stringContaining('context.strategy') }),
    });
    expect(window.summaryPlan(cp, config)).toBeUndefined();
  });

  it('estimates the tokens a call sends: the head, its window and the tools', () => {
    const { window, config, cp } = windowOf(true);
    storedTicks(window, cp, config, 1);
    const small = window.inputEstimate(cp, config, tools);
    const withMore = window.inputEstimate(cp, config, toolSpecs(['fs.read', 'fs.write', 'shell.run']));
    expect(small).toBeGreaterThan(0);
    expect(withMore).toBeGreaterThan(small);
  });

  it('serializes and deserializes: a copy sends the delta the original would', () => {
    const { window, config, cp } = windowOf(true, { contextWindow: 4, context: { strategy: 'window' } });
    storedTicks(window, cp, config, 3);
    const copy = new ContextWindow(roundTrip(window.data));
    const cpCopy = roundTrip(cp);
    expect(contextOf(copy, cpCopy, config)).toEqual(contextOf(window, cp, config));
  });
});
