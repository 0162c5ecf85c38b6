import { describeLogEntry, formatLogEntry } from './log';

const failed = (kind: string, attempt = 1) => ({
  message: 'Activity failed',
  meta: {
    activityType: 'tool',
    workflowId: 'agent-a-task-1',
    attempt,
    error: { type: 'X', details: [{ code: 'EPERM', message: 'outside the workspace', source: 'fs.read', kind }] },
  },
});

describe('worker log lines', () => {
  it('says what failed, why, which attempt and what happens next, for each kind', () => {
    expect(describeLogEntry(failed('execution'))).toEqual({
      text: 'activity tool in agent-a-task-1 failed (attempt 1): EPERM: outside the workspace — not retried: fed back to the agent as pain',
      expected: true,
    });
    expect(describeLogEntry(failed('transient', 3))?.text).toMatch(
      /\(attempt 3\).*transient: Temporal retries it with backoff$/,
    );
    expect(describeLogEntry(failed('fatal'))).toMatchObject({
      expected: false,
      text: expect.stringMatching(/fatal: not retried, the agent pauses for a human$/),
    });
  });

  it('marks a task workflow that failed on purpose as expected, and leaves other lines as they are', () => {
    expect(
      describeLogEntry({ message: 'Workflow failed', meta: { workflowType: 'taskWorkflow', workflowId: 'w' } }),
    ).toEqual({ text: 'task workflow w failed; its agent records the result', expected: true });
    expect(describeLogEntry({ message: 'Workflow failed', meta: { workflowType: 'agentWorkflow' } })).toBeUndefined();
    expect(describeLogEntry({ message: 'Activity failed', meta: { error: { details: [] } } })).toBeUndefined();
    expect(formatLogEntry({ level: 'WARN', message: 'Something', meta: { a: 1 }, timestampNanos: 0n })).toBe(
      'Something {"a":1}',
    );
  });
});
