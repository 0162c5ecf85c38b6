import { AgentIdSchema } from './contract';
import {
  agentOfTaskWorkflowId,
  AgentRefSchema,
  checkTenant,
  qualifiedAgentId,
  splitAgentRef,
  TASK_WORKFLOW_ID_PATTERN,
  tenantOfWorkflowId,
  TenantIdSchema,
  tenantRoots,
} from './tenant';
import { agentWorkflowId, taskWorkflowId } from '../workflows/messages';
import { isRequestError } from './errors';

describe('tenant ids', () => {
  it.each(['acme', 'org_2x9', 'acme.example.com', '0f8c1a2e-6b7d-4c3e-9a1b-2c3d4e5f6a7b', 'A'])('accepts %s', (t) =>
    expect(TenantIdSchema.parse(t)).toBe(t),
  );

  it.each(['', 'a:b', '-acme', 'ac me', 'é', 'my-task-co', 'x'.repeat(65), 'a\u0000b'])('refuses %j', (t) => {
    expect(TenantIdSchema.safeParse(t).success).toBe(false);
  });

  it('says what a tenant id may hold, as a request error naming where it came from', () => {
    let thrown: unknown;
    try {
      checkTenant('a:b', '--tenant');
    } catch (err) {
      thrown = err;
    }
    expect(isRequestError(thrown) && thrown.type).toBe('InvalidArgument');
    expect((thrown as Error).message).toMatch(/^invalid --tenant: tenant may hold only letters, digits/);
  });
});

describe('a tenant’s agent ids', () => {
  it('puts the tenant before the agent’s own id, and nothing before a plain one', () => {
    expect(qualifiedAgentId('acme', 'x')).toBe('acme:x');
    expect(qualifiedAgentId(undefined, 'x')).toBe('x');
    expect(splitAgentRef('acme:x.y')).toEqual({ tenant: 'acme', agentId: 'x.y' });
    expect(splitAgentRef('acme.x')).toEqual({ agentId: 'acme.x' });
  });

  it('never lets a plain agent id name a tenant’s agent: the separator is in no agent id', () => {
    expect(AgentIdSchema.safeParse('acme:x').success).toBe(false);
    expect(AgentRefSchema.parse('acme:x')).toBe('acme:x');
    expect(AgentRefSchema.parse('x')).toBe('x');
  });

  it.each(['acme:', ':x', 'a:b:c', 'my-task-co:x', 'acme:x-task-1', 'acme:-x'])('refuses the full id %j', (ref) => {
    expect(AgentRefSchema.safeParse(ref).success).toBe(false);
  });

  it('tells a workflow’s tenant and a task’s agent from its workflow id', () => {
    expect(tenantOfWorkflowId(agentWorkflowId('acme:x'))).toBe('acme');
    expect(tenantOfWorkflowId(taskWorkflowId('acme:x', 'task-3'))).toBe('acme');
    expect(tenantOfWorkflowId(taskWorkflowId('x', 'task-3'))).toBeUndefined();
    expect(tenantOfWorkflowId('other-acme:x')).toBeUndefined();
    expect(agentOfTaskWorkflowId(taskWorkflowId('acme:x.y', 'task-a-task-b'))).toBe('acme:x.y');
    expect(agentOfTaskWorkflowId(taskWorkflowId('x', 'task-1'))).toBe('x');
    expect(agentOfTaskWorkflowId('agent-x')).toBeUndefined();
  });

  it('matches the task workflow ids of plain and tenant agents, and nothing else', () => {
    for (const id of ['agent-a1-task-1', 'agent-acme:a1-task-1', 'agent-acme.example:a.b-task-mine'])
      expect([id, TASK_WORKFLOW_ID_PATTERN.test(id)]).toEqual([id, true]);
    for (const id of ['agent-a1', 'agent-a:b:c-task-1', 'agent-:a1-task-1', 'agent-a1-task-', 'agent-a b-task-1'])
      expect([id, TASK_WORKFLOW_ID_PATTERN.test(id)]).toEqual([id, false]);
  });

  it('gives a tenant the part of each root named after it, and a plain agent the roots themselves', () => {
    expect(tenantRoots(['/workspaces', '/srv/ws/'], 'acme')).toEqual(['/workspaces/acme', '/srv/ws/acme']);
    expect(tenantRoots(['/'], 'acme')).toEqual(['/acme']);
    expect(tenantRoots(['/workspaces'], undefined)).toEqual(['/workspaces']);
    for (const bad of ['..', '.', 'a/b', '../x', ''])
      expect(() => tenantRoots(['/workspaces'], bad)).toThrow(/invalid tenant/);
  });
});
