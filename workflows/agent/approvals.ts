/**
 * The calls of the running task that wait for a human: the task reports them (`approvals`, internal),
 * the agent lists them and pages its operators once a call; a human's decision (`decideApproval`) is
 * checked against what waits (the validator, and the handler again, since two approvers may race),
 * recorded with who decided, and forwarded to the task.
 */
import { isCancellation, log, setHandler } from '@temporalio/workflow';
import type { AgentEntity } from '../../core/agent-entity';
import { approvalAlert } from '../../core/alerts';
import { approvalsReportSchema, decisionInputSchema, type PendingApproval } from '../../core/approval';
import { parsePayload } from '../../core/payloads';
import { approvalDecidedSignal, approvalsSignal, decideApprovalUpdate } from '../messages';
import { typed } from '../typed';
import { alert } from './activities';
import { ifValid, signalTask, type Report } from './handling';

/** Handle `decideApproval` and the task's `approvals` reports. */
export function listenApprovals(agent: AgentEntity, report: Report): void {
  setHandler(
    decideApprovalUpdate,
    async (raw) => {
      const input = typed(() => parsePayload(decisionInputSchema(), raw, 'decideApproval'));
      const { decision, forwardTo } = typed(() => agent.decide(input, new Date().toISOString()));
      report();
      await signalTask(forwardTo, (handle) => handle.signal(approvalDecidedSignal, decision));
      return decision;
    },
    {
      validator: (raw) =>
        typed(() => agent.validateDecision(parsePayload(decisionInputSchema(), raw, 'decideApproval'), Date.now())),
      description:
        'Decide a tool call that waits for approval: {callId, decision: "approve"|"deny", reason?, note?, args?, by?}. ' +
        '`args` runs the call with edited arguments.',
    },
  );
  setHandler(
    approvalsSignal,
    (raw) =>
      ifValid(approvalsReportSchema(), raw, 'approvals', async (r) => {
        const asked = agent.approvalsReported(r);
        report();
        await Promise.all(asked.map((p) => alertApproval(agent, p)));
      }),
    { description: 'Internal: the running task’s calls that wait for approval, whenever they change. Not for humans.' },
  );
}

/**
 * Page the agent's operators once for a call that waits for a human: which call, and the commands that
 * decide it. Like a lockout's alert, an undeliverable one is logged and never ends the agent.
 */
async function alertApproval(agent: AgentEntity, p: PendingApproval): Promise<void> {
  const { agentId } = agent.data;
  try {
    await alert({ ...approvalAlert(agentId, p), agentId, taskId: p.taskId, workflowId: p.workflowId });
  } catch (err) {
    if (isCancellation(err)) throw err;
    log.error('the approval alert could not be delivered', { agentId, callId: p.callId, error: String(err) });
  }
}
