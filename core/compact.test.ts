import { compactResult, cut, cutStrings } from './compact';
import type { TaskResult } from './contract';

describe('compact', () => {
  it('leaves short strings alone and cuts long ones with a note', () => {
    expect(cut('short', 10)).toBe('short');
    expect(cut('x'.repeat(25), 10)).toBe(`${'x'.repeat(10)}…[15 more characters: see the task workflow's result]`);
  });

  it('cuts every string of a nested value, keeping numbers, booleans and nulls', () => {
    expect(cutStrings({ a: ['yyyy', { b: 'zzzz', n: 3, t: true, z: null }] }, 2)).toEqual({
      a: ['yy…[2 more characters: see the task workflow\'s result]', { b: 'zz…[2 more characters: see the task workflow\'s result]', n: 3, t: true, z: null }],
    });
  });

  it('keeps a result with a 1.5 MB tool argument small', () => {
    const big = 'w'.repeat(1_500_000);
    const result: TaskResult = {
      agentId: 'a', taskId: 'task-1', workflowId: 'agent-a-task-1', outcome: 'COMPLETED', agentState: 'WAITING_FOR_EVENT', ticks: 1, tokensUsed: 1,
      toolCalls: [{ tick: 1, name: 'fs.write', args: { path: 'big.txt', content: big }, fingerprint: '0123456789abcdef', status: 'ok' }],
      injections: [], finalText: 'done',
    };
    const kept = compactResult(result);
    expect(JSON.stringify(kept).length).toBeLessThan(3_000);
    expect(kept.toolCalls[0]).toMatchObject({ name: 'fs.write', status: 'ok', args: { path: 'big.txt' } });
    expect(kept.finalText).toBe('done');
  });
});
