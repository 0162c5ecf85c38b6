/**
 * Everything an agent carries across tasks and continue-as-new (`AgentData`): one plain object made of
 * its collaborators' parts, each defined, documented and changed by its own module beside this one.
 */
import type { AgentConfig } from '../config';
import { emptyInbox } from '../priority-inbox';
import { initialCounters } from '../safety-counters';
import type { LimitsData } from './agent-limits';
import type { ApprovalsData } from './approvals';
import type { InboxData } from './inbox';
import type { LockData } from './lock';
import type { MessagesData } from './messages';
import type { ResultsData } from './results';
import type { RunsData } from './runs';
import type { SubmitsData } from './submits';
import type { UsageData } from './usage';

/**
 * Everything the agent carries across tasks and continue-as-new: its id and the parts of its
 * collaborators, its config and limits (`agent-limits.ts`), its state and lock (`lock.ts`), its spend
 * and counters (`usage.ts`), its queue (`inbox.ts`), its running and suspended tasks (`runs.ts`), its
 * kept results and cancelled tasks (`results.ts`), the messages for its next task (`messages.ts`), the
 * answered submits (`submits.ts`) and the calls that wait for a human (`approvals.ts`).
 */
export interface AgentData
  extends LimitsData, LockData, UsageData, InboxData, RunsData, ResultsData, MessagesData, SubmitsData, ApprovalsData {
  agentId: string;
}

/**
 * A new agent's data: waiting, nothing held; with `config`, the one it starts with.
 *
 * ```ts
 * newAgentData('a1').agentState // 'WAITING_FOR_EVENT'
 * ```
 */
export function newAgentData(agentId: string, config?: AgentConfig): AgentData {
  return {
    agentId,
    ...(config ? { config } : {}),
    agentState: 'WAITING_FOR_EVENT',
    tokensUsed: 0,
    inbox: emptyInbox(),
    counters: initialCounters(),
    nextTaskNumber: 1,
    resumeRequested: false,
    cancelledTasks: [],
    tasks: [],
    unlocks: [],
    pendingMessages: [],
  };
}
