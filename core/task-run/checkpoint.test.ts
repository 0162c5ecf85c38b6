import { getGuide } from '../guides';
import { LIMITS } from '../payloads';
import type { ToolCallRecord } from '../types';
import { ANCHORED, CARRIED_RECORDS, carried, freshCheckpoint, inject } from './checkpoint';
import { checkpointOf, configOf, textOf } from './test-support';

const record = (tick: number, path = 'notes.md'): ToolCallRecord => ({
  tick,
  name: 'fs.read',
  args: { path },
  fingerprint: 'f',
  status: 'ok',
});

describe('a task checkpoint', () => {
  it("starts from the anchored head: the guide's system prompt, naming the offered tools, and the goal", () => {
    const config = configOf();
    const cp = freshCheckpoint(getGuide('pain'), config, 'read notes.md', ['fs.read', 'my.tool']);
    expect(cp.messages).toHaveLength(ANCHORED);
    expect(cp.messages[0]).toEqual({
      role: 'system',
      text: getGuide('pain').systemPrompt(config, ['fs.read', 'my.tool']),
    });
    expect(textOf(cp.messages[0])).toContain('my.tool');
    expect(cp.messages[1]).toEqual({ role: 'user', text: 'read notes.md' });
    expect(cp).toMatchObject({
      ticks: 0,
      callNumber: 0,
      tokensUsed: 0,
      toolCalls: [],
      injections: [],
      verifyAsked: false,
    });
  });

  it('records an injection and tells the model the same text', () => {
    const cp = checkpointOf();
    inject(cp, 3, 'REPEAT_ALERT', 'SYSTEM ALERT: stop');
    expect(cp.injections).toEqual([{ tick: 3, kind: 'REPEAT_ALERT', text: 'SYSTEM ALERT: stop' }]);
    expect(cp.messages.at(-1)).toEqual({ role: 'user', text: 'SYSTEM ALERT: stop' });
  });
});

describe('the checkpoint a run hands on', () => {
  it('carries the newest records only, and says how many it dropped', () => {
    const cp = checkpointOf();
    cp.toolCalls = Array.from({ length: CARRIED_RECORDS + 7 }, (_, i) => record(i + 1));
    cp.injections = [{ tick: 1, kind: 'PAIN', text: 'p' }];
    const { checkpoint, dropped } = carried(cp);
    expect(dropped).toEqual({ toolCalls: 7, injections: 0 });
    expect(checkpoint.toolCalls).toHaveLength(CARRIED_RECORDS);
    expect(checkpoint.toolCalls[0]?.tick).toBe(8);
    // The run's own checkpoint keeps only those too: a second hand-on drops nothing more.
    expect(carried(cp).dropped).toEqual({ toolCalls: 0, injections: 0 });
  });

  it('cuts long strings in its records, so it stays far below the payload limit', () => {
    const cp = checkpointOf();
    cp.toolCalls = [record(1, 'x'.repeat(LIMITS.keptStringChars + 100))];
    const { checkpoint } = carried(cp);
    const path = (checkpoint.toolCalls[0]?.args as { path: string }).path;
    expect(path).toMatch(/…\[100 more characters left out\]$/);
  });

  it('hands on a copy of the messages: what the run adds later is not in it', () => {
    const cp = checkpointOf();
    const { checkpoint } = carried(cp);
    inject(cp, 1, 'MESSAGE', 'later');
    expect(checkpoint.messages).toHaveLength(ANCHORED);
  });
});
