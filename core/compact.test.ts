import { compactResult, cut, cutStrings, fitResult, jsonBytes } from './compact';
import type { TaskResult } from './contract';

describe('compact', () => {
  it('leaves short strings alone and cuts long ones with a note', () => {
    expect(cut('short', 10)).toBe('short');
    expect(cut('x'.repeat(25), 10)).toBe(`${'x'.repeat(10)}…[15 more characters left out]`);
  });

  it('cuts every string of a nested value, keeping numbers, booleans and nulls', () => {
    expect(cutStrings({ a: ['yyyy', { b: 'zzzz', n: 3, t: true, z: null }] }, 2)).toEqual({
      a: ['yy…[2 more characters left out]', { b: 'zz…[2 more characters left out]', n: 3, t: true, z: null }],
    });
  });

  it('keeps a result with a 1.5 MB tool argument small', () => {
    const big = 'w'.repeat(1_500_000);
    const result: TaskResult = {
      agentId: 'a',
      taskId: 'task-1',
      workflowId: 'agent-a-task-1',
      outcome: 'COMPLETED',
      agentState: 'WAITING_FOR_EVENT',
      ticks: 1,
      tokensUsed: 1,
      toolCalls: [
        {
          tick: 1,
          name: 'fs.write',
          args: { path: 'big.txt', content: big },
          fingerprint: '0123456789abcdef',
          status: 'ok',
        },
      ],
      injections: [],
      finalText: 'done',
    };
    const kept = compactResult(result);
    expect(JSON.stringify(kept).length).toBeLessThan(3_000);
    expect(kept.toolCalls[0]).toMatchObject({ name: 'fs.write', status: 'ok', args: { path: 'big.txt' } });
    expect(kept.finalText).toBe('done');
  });

  const call = (i: number, content: string) => ({
    tick: i,
    name: 'fs.write',
    args: { path: `f${i}.txt`, content },
    fingerprint: '0123456789abcdef',
    status: 'ok' as const,
  });
  const resultWith = (toolCalls: TaskResult['toolCalls']): TaskResult => ({
    agentId: 'a',
    taskId: 'task-1',
    workflowId: 'agent-a-task-1',
    outcome: 'COMPLETED',
    agentState: 'WAITING_FOR_EVENT',
    ticks: toolCalls.length,
    tokensUsed: 1,
    toolCalls,
    injections: toolCalls.map((c) => ({ tick: c.tick, kind: 'PAIN' as const, text: 'p'.repeat(3000) })),
    finalText: 'done',
  });

  it('counts UTF-8 bytes of the JSON, as the payload converter stores it', () => {
    expect(jsonBytes('a')).toBe(3);
    expect(jsonBytes('é')).toBe(4);
    expect(jsonBytes('漢')).toBe(5);
    expect(jsonBytes('😀')).toBe(6);
  });

  it('returns a result that already fits unchanged', () => {
    const r = resultWith([call(1, 'small')]);
    expect(fitResult(r, 16_000)).toBe(r);
  });

  it('fits 1,000 tool calls of 100 KB each into the byte budget, keeping the newest and counting what it left out', () => {
    const r = resultWith(Array.from({ length: 1000 }, (_, i) => call(i + 1, 'x'.repeat(100_000))));
    const kept = fitResult(r, 16_000);
    expect(jsonBytes(kept)).toBeLessThanOrEqual(16_000);
    expect(kept.toolCalls.length).toBeGreaterThan(0);
    expect(kept.toolCalls.at(-1)?.tick).toBe(1000);
    expect(kept.omitted).toEqual({
      toolCalls: 1000 - kept.toolCalls.length,
      injections: 1000 - kept.injections.length,
    });
    expect(kept.finalText).toBe('done');
  });

  it('cuts strings before it leaves anything out', () => {
    const r = resultWith([call(1, 'x'.repeat(100_000))]);
    const kept = fitResult(r, 16_000);
    expect(kept.toolCalls).toHaveLength(1);
    expect(kept.omitted).toBeUndefined();
  });
});
