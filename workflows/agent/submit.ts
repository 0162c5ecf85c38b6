/**
 * The agent's `submitTask` update: one parse, shared by the validator and the handler (no validator runs
 * on replay); then the worker checks the task's limits against its policy, and the agent's state decides
 * (it may have changed while the worker looked). An update delivered again gets its first answer.
 */
import { currentUpdateInfo, setHandler } from '@temporalio/workflow';
import type { AgentEntity } from '../../core/agent-entity';
import { RefusedError } from '../../core/errors';
import { submitTaskUpdate } from '../messages';
import { typed } from '../typed';
import { checkTaskLimits, submitted } from './activities';
import type { Report } from './handling';

/** Handle `submitTask`. */
export function listenSubmits(agent: AgentEntity, report: Report): void {
  setHandler(
    submitTaskUpdate,
    async (raw) => {
      const updateId = currentUpdateInfo()?.id;
      const again = agent.answered(updateId);
      if (again) return again;
      const input = typed(() => agent.parseSubmit(raw));
      const config = input.config ?? agent.data.config;
      if (config) {
        const { refused } = await checkTaskLimits(submitted(agent.data.agentId, config, agent.data.config));
        if (refused)
          typed(() => {
            throw new RefusedError(refused);
          });
      }
      const out = typed(() => agent.submit(input, updateId));
      report();
      return out;
    },
    // Only the validator knows the time the submit arrived: one past its `acceptBy` is refused there.
    {
      validator: (raw) =>
        typed(() => agent.validateSubmit(agent.parseSubmit(raw), currentUpdateInfo()?.id, Date.now())),
      description: 'Submit a task: {goal, priority?, config?, taskId?, acceptBy?}. Refused while the agent is locked.',
    },
  );
}
