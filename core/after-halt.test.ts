import type { TaskResult } from './types';
import { nothingToResume, notResubmittable, type AfterHalt } from './after-halt';

const result = (taskId: string, outcome: TaskResult['outcome']) => ({ taskId, outcome }) as TaskResult;
const cancelled = (taskId: string) => ({ taskId, goal: 'g', priority: 5, reason: 'SYSTEM_HALT' });
const state = (s: Partial<AfterHalt>): AfterHalt => ({ cancelledTasks: [], tasks: [], ...s });

describe('nothingToResume', () => {
  it('is silent when a task is suspended: the unlock resumes it', () => {
    expect(
      nothingToResume('a1', state({ suspendedTask: { taskId: 'task-2', workflowId: 'agent-a1-task-2' } })),
    ).toBeUndefined();
  });

  it('says the halted task ended CANCELLED and names the queued tasks resubmit takes', () => {
    expect(
      nothingToResume(
        'a1',
        state({ tasks: [result('task-3', 'CANCELLED')], cancelledTasks: [cancelled('task-4'), cancelled('task-5')] }),
      ),
    ).toBe(
      'nothing to resume: no task was suspended (task-3 ended CANCELLED: a halt cancels the running task rather than suspending it; ' +
        'submit its goal again to run it anew); queued task(s) cancelled before they started: task-4, task-5 ' +
        '(`starry resubmit a1 task-4` queues one again)',
    );
  });

  it('says there is nothing to resubmit either when no queued task was cancelled', () => {
    expect(nothingToResume('a1', state({ tasks: [result('task-1', 'COMPLETED')] }))).toBe(
      "nothing to resume: no task was suspended (task-1 ended COMPLETED; only a task a breaker's lock suspended can be resumed); " +
        'no queued task was cancelled, so there is nothing to resubmit either',
    );
  });
});

describe('notResubmittable', () => {
  it('says a task that ran is not one to resubmit, and how it ended', () => {
    expect(notResubmittable('a1', 'task-3', state({ tasks: [result('task-3', 'CANCELLED')] }))).toBe(
      'agent a1 has no cancelled task task-3: a halt cancelled none of its queued tasks, so there is nothing to resubmit; ' +
        'task-3 started and ended CANCELLED (resubmit queues again only tasks a halt cancelled before they started: ' +
        'submit its goal again to run it anew)',
    );
  });

  it('points a suspended task to unlock --resume', () => {
    expect(notResubmittable('a1', 'task-2', state({ tasks: [result('task-2', 'SUSPENDED')] }))).toContain(
      'or `starry unlock a1 --resume` continues it',
    );
  });

  it('lists the cancelled tasks for an id the agent never had', () => {
    expect(notResubmittable('a1', 'task-nope', state({ cancelledTasks: [cancelled('task-keep')] }))).toBe(
      'agent a1 has no cancelled task task-nope: its cancelled tasks are task-keep',
    );
  });
});
