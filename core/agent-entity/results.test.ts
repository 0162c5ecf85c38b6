import { jsonBytes } from '../compact';
import { LIMITS } from '../payloads';
import { emptyInbox, enqueue, ordered } from '../priority-inbox';
import type { TaskResult } from '../types';
import {
  abortResult,
  cancelCleared,
  KEEP_RECENT,
  keepRecent,
  lastTick,
  recordResult,
  uncancel,
  type ResultsData,
} from './results';

const empty = (): ResultsData => ({ cancelledTasks: [], tasks: [] });
const result = (taskId: string, over: Partial<TaskResult> = {}): TaskResult => ({
  agentId: 'a1',
  taskId,
  workflowId: `wf-${taskId}`,
  outcome: 'COMPLETED',
  agentState: 'WAITING_FOR_EVENT',
  ticks: 3,
  tokensUsed: 10,
  toolCalls: [],
  injections: [],
  ...over,
});

describe('agent results: what an agent keeps of its tasks', () => {
  it('keeps one result per task, the newest KEEP_RECENT, in the order they ended', () => {
    const d = empty();
    for (let i = 1; i <= KEEP_RECENT + 2; i++) recordResult(d, result(`task-${i}`));
    expect(d.tasks.map((t) => t.taskId)).toEqual(Array.from({ length: KEEP_RECENT }, (_, i) => `task-${i + 3}`));
    recordResult(d, result('task-5', { outcome: 'FAILED' }));
    expect(d.tasks.filter((t) => t.taskId === 'task-5')).toEqual([result('task-5', { outcome: 'FAILED' })]);
    expect(d.tasks.at(-1)?.taskId).toBe('task-5');
    expect(keepRecent([1, 2, 3])).toEqual([1, 2, 3]);
  });

  it('keeps a result compact, whatever its task wrote', () => {
    const d = empty();
    recordResult(d, result('task-1', { finalText: 'x'.repeat(100_000) }));
    expect(jsonBytes(d.tasks[0])).toBeLessThanOrEqual(LIMITS.keptResultBytes);
  });

  it('ends a suspended task ABORTED in its kept result, with the agent state after the unlock', () => {
    const d = empty();
    recordResult(d, result('task-1', { outcome: 'SUSPENDED', agentState: 'SAFETY_LOCKOUT', ticks: 7 }));
    abortResult(d, 'task-1', 'WAITING_FOR_EVENT');
    expect(d.tasks).toEqual([result('task-1', { outcome: 'ABORTED', agentState: 'WAITING_FOR_EVENT', ticks: 7 })]);
    abortResult(d, 'task-9', 'WAITING_FOR_EVENT');
    expect(d.tasks).toHaveLength(1);
    expect(lastTick(d)).toBe(7);
    expect(lastTick(empty())).toBe(0);
  });

  it('records the tasks a halt cleared with their input and the way back, bounded, until one is submitted again', () => {
    let inbox = emptyInbox();
    for (let i = 1; i <= LIMITS.cancelledTasks + 1; i++)
      inbox = enqueue(inbox, { taskId: `task-${i}`, goal: `g${i}`, priority: 5 });
    const d = empty();
    cancelCleared(d, ordered(inbox), 'ops');
    expect(d.cancelledTasks).toHaveLength(LIMITS.cancelledTasks);
    expect(d.cancelledTasks[0]).toEqual({
      taskId: 'task-2',
      goal: 'g2',
      priority: 5,
      reason: 'cancelled by SYSTEM_HALT (ops) before it started; resubmit it to run it',
    });
    uncancel(d, 'task-2');
    expect(d.cancelledTasks.some((c) => c.taskId === 'task-2')).toBe(false);
    expect(d.cancelledTasks).toHaveLength(LIMITS.cancelledTasks - 1);
  });

  it('is plain data that survives JSON, as continue-as-new carries it', () => {
    const d = empty();
    recordResult(d, result('task-1'));
    cancelCleared(d, [{ taskId: 'task-2', goal: 'g', priority: 1, seq: 1 }], 'ops');
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
  });
});
