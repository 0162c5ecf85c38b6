import { initialCounters } from '../safety-counters';
import type { TaskCheckpoint } from '../types';
import {
  canStart,
  decideSuspended,
  endRun,
  forgetResume,
  holdsRun,
  progressRun,
  startRun,
  suspendRun,
  takeResume,
  type RunsData,
} from './runs';

const task = (taskId: string) => ({ taskId, goal: 'g', priority: 5, seq: 1 });
const checkpoint: TaskCheckpoint = {
  messages: [],
  ticks: 4,
  callNumber: 4,
  tokensUsed: 80,
  toolCalls: [],
  injections: [],
  verifyAsked: false,
};
const idle = (): RunsData => ({ resumeRequested: false });
/** A task that ran and was suspended with `checkpoint`. */
const suspended = (): RunsData => {
  const d = idle();
  startRun(d, { task: task('task-1'), workflowId: 'wf-task-1' });
  suspendRun(d, endRun(d)!, checkpoint);
  return d;
};

describe('agent runs: the running task and the suspended one', () => {
  it('starts a run only when none runs, the agent is not locked, and a task waits or a resume was asked', () => {
    expect(canStart(idle(), false, 0)).toBe(false);
    expect(canStart(idle(), false, 1)).toBe(true);
    expect(canStart(idle(), true, 1)).toBe(false);
    const running = idle();
    startRun(running, { task: task('task-1'), workflowId: 'wf-task-1' });
    expect(canStart(running, false, 1)).toBe(false);
    // A suspended task blocks the inbox until an unlock decides it.
    const d = suspended();
    expect(canStart(d, false, 3)).toBe(false);
    decideSuspended(d, true);
    expect(canStart(d, false, 0)).toBe(true);
  });

  it('resumes a suspended task from its checkpoint’s tick, once, and only when asked', () => {
    const d = suspended();
    expect(takeResume(d)).toBeUndefined();
    expect(d.suspended?.task.taskId).toBe('task-1');
    expect(decideSuspended(d, true)).toEqual({
      taskId: 'task-1',
      resumed: true,
      note: 'task task-1 resumes with a fresh tick allowance',
    });
    const next = takeResume(d)!;
    expect(next).toEqual({ task: task('task-1'), workflowId: 'wf-task-1', checkpoint });
    expect(d).toEqual({ resumeRequested: false, suspended: undefined, current: undefined });
    startRun(d, next);
    expect(d.current).toEqual({ task: task('task-1'), workflowId: 'wf-task-1', tick: 4, runTokens: 0 });
  });

  it('drops a suspended task an unlock does not resume, saying how to resume instead', () => {
    const d = suspended();
    expect(decideSuspended(d, false)).toEqual({
      taskId: 'task-1',
      resumed: false,
      note: 'task task-1 ended ABORTED (transcript kept); pass --resume to continue it instead',
    });
    expect(d.suspended).toBeUndefined();
    expect(decideSuspended(d, true)).toBeUndefined();
  });

  it('forgets an asked resume at a halt', () => {
    const d = suspended();
    decideSuspended(d, true);
    forgetResume(d);
    expect(canStart(d, false, 0)).toBe(false);
    expect(d.suspended).toBeDefined();
  });

  it('takes the running task’s progress and ignores another task’s', () => {
    const d = idle();
    startRun(d, { task: task('task-2'), workflowId: 'wf-task-2' });
    const report = { tick: 6, runTokens: 90, runCostUsd: 0.01, traceId: 'abc', counters: initialCounters() };
    expect(progressRun(d, { ...report, taskId: 'task-1' })).toBe(false);
    expect(d.current).toEqual({ task: task('task-2'), workflowId: 'wf-task-2', tick: 0, runTokens: 0 });
    expect(progressRun(d, { ...report, taskId: 'task-2', runCachedInputTokens: 30 })).toBe(true);
    expect(d.current).toMatchObject({
      tick: 6,
      runTokens: 90,
      runCachedInputTokens: 30,
      runCostUsd: 0.01,
      traceId: 'abc',
    });
    expect(holdsRun(d, 'task-2')).toBe(true);
    expect(holdsRun(d, 'task-1')).toBe(false);
    expect(endRun(d)?.task.taskId).toBe('task-2');
    expect(d.current).toBeUndefined();
    expect(holdsRun(suspended(), 'task-1')).toBe(true);
  });

  it('is plain data that survives JSON, as continue-as-new carries it', () => {
    const d = suspended();
    decideSuspended(d, true);
    expect(JSON.parse(JSON.stringify(d))).toEqual(d);
  });
});
