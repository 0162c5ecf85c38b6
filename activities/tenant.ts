/**
 * Whose task an activity runs for: the tenant in its workflow id (core/tenant.ts). Workflow ids are set
 * by the clients, which qualify them by the caller's tenant at the edge (the API from its token), so a
 * task cannot name another tenant's.
 */
import { Context } from '@temporalio/activity';
import { tenantOfWorkflowId } from '../core/tenant';

/**
 * The tenant whose task the current activity runs, from its workflow id (`agent-<tenant>:<id>-task-<n>`,
 * or the agent's own for the submit check); undefined for a plain agent's, or outside an activity.
 *
 * ```ts
 * const roots = tenantRoots(policy.roots, activityTenant());
 * ```
 */
export function activityTenant(): string | undefined {
  let workflowId: string | undefined;
  try {
    workflowId = Context.current().info.workflowExecution?.workflowId;
  } catch {
    return undefined; // not in an activity: a reader that names its tenant itself
  }
  return workflowId === undefined ? undefined : tenantOfWorkflowId(workflowId);
}
