/**
 * Tenants (docs/API.md#tenants): each tenant has an agent-id space of its own. Tenant `acme`'s agent
 * `x` is the agent `acme:x` everywhere inside (workflow `agent-acme:x`, its tasks
 * `agent-acme:x-task-<n>`), so two tenants never collide on a name, and a workflow id says whose it is.
 * The separator `:` is in neither an agent id nor a tenant id, so an id with a `:` always names a
 * tenant's agent, and one without never does: no plain id can reach into a tenant's space.
 */
import { z } from 'zod';
import { AgentIdSchema, nameSchema } from './contract';
import { InvalidArgumentError } from './errors';

/** Between the tenant and the agent's own id: in no agent id and no tenant id. */
export const TENANT_SEPARATOR = ':';

/**
 * A tenant id, shaped like an agent id (1–64 of `A-Z a-z 0-9 _ . -`, starting with a letter or digit,
 * never `-task`), so a task's workflow id still splits into agent and task at its first `-task`.
 */
export const TenantIdSchema = nameSchema('tenant');

/**
 * Any agent's full id: a plain agent id, or a tenant's (`<tenant>:<agentId>`). What the client accepts
 * when it acts for no tenant in particular (the CLI without `--tenant`).
 */
export const AgentRefSchema = z.string({ error: 'agentId must be a string' }).superRefine((ref, ctx) => {
  const { tenant, agentId } = splitAgentRef(ref);
  const issues = [
    ...(AgentIdSchema.safeParse(agentId).error?.issues ?? []),
    ...(tenant !== undefined ? (TenantIdSchema.safeParse(tenant).error?.issues ?? []) : []),
  ];
  for (const issue of issues) ctx.addIssue({ code: 'custom', message: issue.message });
});

/**
 * The id an agent of `tenant` has inside (no tenant: the id itself).
 *
 * ```ts
 * qualifiedAgentId('acme', 'x') // 'acme:x'
 * ```
 */
export function qualifiedAgentId(tenant: string | undefined, agentId: string): string {
  return tenant === undefined ? agentId : `${tenant}${TENANT_SEPARATOR}${agentId}`;
}

/**
 * An agent's full id split into its tenant (absent for a plain id) and its own id.
 *
 * ```ts
 * splitAgentRef('acme:x') // { tenant: 'acme', agentId: 'x' }
 * ```
 */
export function splitAgentRef(ref: string): { tenant?: string; agentId: string } {
  const at = ref.indexOf(TENANT_SEPARATOR);
  return at < 0 ? { agentId: ref } : { tenant: ref.slice(0, at), agentId: ref.slice(at + 1) };
}

/**
 * The tenant a workflow id (`agent-<tenant>:<agentId>…`) belongs to, or undefined for a plain agent's.
 *
 * ```ts
 * tenantOfWorkflowId('agent-acme:x-task-3') // 'acme'
 * ```
 */
export function tenantOfWorkflowId(workflowId: string): string | undefined {
  if (!workflowId.startsWith('agent-')) return undefined;
  return splitAgentRef(workflowId.slice('agent-'.length)).tenant;
}

/**
 * The agent's full id in a task's workflow id (`agent-<ref>-task-<n>`), or undefined when the id is not
 * a task's. Neither an agent id nor a tenant contains `-task`, so the first `-task-` ends the agent's id.
 *
 * ```ts
 * agentOfTaskWorkflowId('agent-acme:x-task-3') // 'acme:x'
 * ```
 */
export function agentOfTaskWorkflowId(workflowId: string): string | undefined {
  const end = workflowId.indexOf('-task-');
  return workflowId.startsWith('agent-') && end > 'agent-'.length ? workflowId.slice('agent-'.length, end) : undefined;
}

/**
 * A tenant id checked at the edge (a token's claim, `--tenant`).
 *
 * ```ts
 * checkTenant('acme', '--tenant') // 'acme'; 'a:b' throws InvalidArgumentError
 * ```
 * @throws InvalidArgumentError saying what a tenant id may hold.
 */
export function checkTenant(raw: unknown, what: string): string {
  const parsed = TenantIdSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => i.message);
  throw new InvalidArgumentError(`invalid ${what}: ${issues.join('; ')}`, { issues });
}

// Shared with the API's path schema: a task workflow id of a plain agent or of a tenant's.
const NAME = '[A-Za-z0-9][A-Za-z0-9_.-]{0,63}';
/** `agent-[<tenant>:]<agentId>-task-<n>`, as a pattern (the API's path parameter, the OpenAPI document). */
export const TASK_WORKFLOW_ID_PATTERN = new RegExp(
  `^agent-(?:${NAME}${TENANT_SEPARATOR})?${NAME}-task-[A-Za-z0-9_.-]{1,60}$`,
);

/**
 * A tenant's part of the worker's roots (docs/ARCHITECTURE.md, "Tenants"): `<root>/<tenant>` for each
 * root, so tenants never share a workspace, a disk quota or a path; without a tenant, the roots
 * themselves. A tenant id is one path segment (no `/`, never `.` or `..`: it starts with a letter or
 * digit), so the join cannot climb out of its root.
 *
 * ```ts
 * tenantRoots(['/workspaces'], 'acme') // ['/workspaces/acme']
 * tenantRoots(['/workspaces'], undefined) // ['/workspaces']
 * ```
 */
export function tenantRoots(roots: readonly string[], tenant: string | undefined): string[] {
  if (tenant === undefined) return [...roots];
  const id = checkTenant(tenant, 'tenant');
  return roots.map((root) => (root === '/' ? `/${id}` : `${root.replace(/\/+$/, '')}/${id}`));
}
