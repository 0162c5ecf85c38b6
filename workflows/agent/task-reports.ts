/**
 * What the agent hears from its tasks and its deployment, none of it for humans: a running task's
 * progress (every few ticks), a cancelled task's output (a workflow that ends CANCELED has no result, so
 * the task sends it first), and a new Worker Deployment Version becoming current.
 */
import { setHandler } from '@temporalio/workflow';
import type { AgentEntity } from '../../core/agent-entity';
import { taskEndedSchema, taskProgressSchema } from '../../core/payloads';
import type { TaskRunOutput } from '../../core/task-run';
import { newVersionSignal, taskEndedSignal, taskProgressSignal } from '../messages';
import { ifValid, type Report } from './handling';

/** Handle `taskProgress`, `taskEnded` and `newVersion`; returns where cancelled tasks' outputs arrive, by workflow id. */
export function listenTaskReports(agent: AgentEntity, report: Report): Map<string, TaskRunOutput> {
  setHandler(
    taskProgressSignal,
    (raw) =>
      ifValid(taskProgressSchema(), raw, 'taskProgress', (p) => {
        agent.progress(p);
        report();
      }),
    { description: 'Internal: sent by the running task every few ticks. Not for humans.' },
  );

  const ended = new Map<string, TaskRunOutput>();
  setHandler(
    taskEndedSignal,
    (raw) =>
      ifValid(taskEndedSchema(), raw, 'taskEnded', (out) => {
        ended.set(out.result.workflowId, out as TaskRunOutput);
      }),
    { description: 'Internal: sent by a cancelled task with its output, just before it ends. Not for humans.' },
  );

  // Nothing to do but wake: the loop sees the new version and continues as new onto it when idle.
  setHandler(newVersionSignal, () => undefined, {
    description: 'Internal: a new Worker Deployment Version is current; an idle agent moves to it. Not for humans.',
  });
  return ended;
}
