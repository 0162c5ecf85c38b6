import { parseAgentConfig } from '../config';
import { emptyInbox, enqueue } from '../priority-inbox';
import { newAgentData, type AgentData } from './data';
import { detailsOf, reportedOf, statusOf, taskStartReportedOf } from './views';

const config = parseAgentConfig({ safety: { tokenBudget: 1000 } }, 'scripted:x.json');
const task = (taskId: string, priority = 5) => ({ taskId, goal: `goal of ${taskId}`, priority, seq: 1 });

/** An agent running task-1 at tick 3, with task-3 and task-2 queued and a result kept. */
function busy(): AgentData {
  const d = newAgentData('a1', config);
  d.agentState = 'EXECUTING';
  d.tokensUsed = 100;
  d.costUsd = 0.5;
  d.current = { task: task('task-1'), workflowId: 'wf-task-1', tick: 3, runTokens: 40, runCostUsd: 0.25, traceId: 't' };
  d.inbox = enqueue(enqueue(emptyInbox(), task('task-2')), task('task-3', 1));
  d.lastErrorCode = 'ENOENT';
  return d;
}

describe('agent views: what it shows', () => {
  it('reports its search attributes, the running task’s tokens and tick included', () => {
    expect(reportedOf(newAgentData('a1'))).toEqual({
      agentId: 'a1',
      agentState: 'WAITING_FOR_EVENT',
      tick: 0,
      tokensUsed: 0,
      lockReason: null,
    });
    expect(reportedOf(busy())).toEqual({
      agentId: 'a1',
      agentState: 'EXECUTING',
      tick: 3,
      tokensUsed: 140,
      lastErrorCode: 'ENOENT',
      lockReason: null,
    });
  });

  it('reports the tick its last task stopped at while locked, with the lock reason', () => {
    const d = newAgentData('a1', config);
    d.agentState = 'SAFETY_LOCKOUT';
    d.reason = { code: 'LOOP_CAP', message: 'cap' };
    d.tasks = [
      {
        agentId: 'a1',
        taskId: 'task-1',
        workflowId: 'w',
        outcome: 'SUSPENDED',
        agentState: 'SAFETY_LOCKOUT',
        ticks: 4,
        tokensUsed: 9,
        toolCalls: [],
        injections: [],
      },
    ];
    expect(reportedOf(d)).toMatchObject({ tick: 4, lockReason: 'LOOP_CAP' });
  });

  it('gives a task about to start its own search attributes: EXECUTING, from its checkpoint when it resumes', () => {
    expect(taskStartReportedOf('a1', { task: task('task-1'), workflowId: 'w', config })).toEqual({
      agentId: 'a1',
      agentState: 'EXECUTING',
      tick: 0,
      tokensUsed: 0,
      lockReason: null,
    });
    const checkpoint = {
      messages: [],
      ticks: 4,
      callNumber: 4,
      tokensUsed: 80,
      toolCalls: [],
      injections: [],
      verifyAsked: false,
    };
    expect(taskStartReportedOf('a1', { task: task('task-1'), workflowId: 'w', config, checkpoint })).toMatchObject({
      tick: 4,
      tokensUsed: 80,
    });
  });

  it('answers the state query with its queue in run order, its spend and the running task', () => {
    const s = statusOf(busy());
    expect(s).toMatchObject({
      agentId: 'a1',
      agentState: 'EXECUTING',
      tokensUsed: 140,
      tokenBudget: 1000,
      costUsd: 0.75,
      queue: [
        { taskId: 'task-3', priority: 1, goal: 'goal of task-3' },
        { taskId: 'task-2', priority: 5, goal: 'goal of task-2' },
      ],
      currentTask: {
        taskId: 'task-1',
        workflowId: 'wf-task-1',
        tick: 3,
        runTokens: 40,
        runCostUsd: 0.25,
        traceId: 't',
      },
      limits: config.safety,
      guide: 'pain',
      llm: 'scripted:x.json',
      limitChanges: [],
    });
    expect(s).not.toHaveProperty('suspendedTask');
    expect(statusOf(newAgentData('a2'))).toMatchObject({ tokenBudget: 0, guide: '', llm: '', queue: [] });
    expect(statusOf(newAgentData('a2'))).not.toHaveProperty('limits');
  });

  it('shows its state and why first in the Web UI’s details, then what it holds', () => {
    const d = busy();
    expect(detailsOf(d).split('\n')).toEqual([
      '### Agent a1 · EXECUTING',
      '- tokens **100** / 1000 · cost **$0.5** · guide `pain` · llm `scripted:x.json`',
      expect.stringMatching(/^- limits: maxTicks 50 · tokenBudget 1000 · repeatThreshold 3 · /),
      '- running **task-1** at tick 3',
      '- queue: task-3 (p1), task-2 (p5)',
    ]);
    d.agentState = 'STOPPED';
    d.reason = { code: 'SYSTEM_HALT', message: 'SYSTEM_HALT by bob' };
    expect(detailsOf(d)).toMatch(
      /^### Agent a1 · STOPPED \(SYSTEM_HALT\)\n> SYSTEM_HALT by bob\n- \*\*locked\*\*: refuses tasks until `starry unlock a1`/,
    );
    expect(detailsOf(newAgentData('a2'))).toBe(
      '### Agent a2 · WAITING_FOR_EVENT\n- tokens **0** · no config yet\n- no task running\n- queue: empty',
    );
  });
});
