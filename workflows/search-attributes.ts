/**
 * Search attributes on every agent and task workflow (docs/ARCHITECTURE.md#workflows), so an operator can filter
 * `AgentState="SAFETY_LOCKOUT"` in the Web UI. The dev server registers them at start. `searchAttributes`
 * is the one place that turns what an agent or a task reports into them; readers use the keys.
 */
import {
  defineSearchAttributeKey,
  SearchAttributeType,
  type SearchAttributePair,
  type SearchAttributeUpdatePair,
} from '@temporalio/common';
import type { Reported } from '../core/agent-entity';

export const AgentIdKey = defineSearchAttributeKey('AgentId', SearchAttributeType.KEYWORD);
export const AgentStateKey = defineSearchAttributeKey('AgentState', SearchAttributeType.KEYWORD);
export const TickIndexKey = defineSearchAttributeKey('TickIndex', SearchAttributeType.INT);
export const TokensUsedKey = defineSearchAttributeKey('TokensUsed', SearchAttributeType.INT);
export const LastErrorCodeKey = defineSearchAttributeKey('LastErrorCode', SearchAttributeType.KEYWORD);
export const LockReasonKey = defineSearchAttributeKey('LockReason', SearchAttributeType.KEYWORD);
/**
 * The tenant of a tenant's agent (core/tenant.ts), set by the client when it starts the agent and never
 * written by a workflow: `Tenant="acme"` lists tenant acme's agents. Its tasks carry none; their ids
 * (`agent-acme:…`) and `AgentId` say whose they are.
 */
export const TenantKey = defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD);

/** Name → CLI type, for `temporal server start-dev --search-attribute` and the operator API. */
export const SEARCH_ATTRIBUTES: Record<string, 'Keyword' | 'Int'> = {
  AgentId: 'Keyword',
  AgentState: 'Keyword',
  TickIndex: 'Int',
  TokensUsed: 'Int',
  LastErrorCode: 'Keyword',
  LockReason: 'Keyword',
  Tenant: 'Keyword',
};

/**
 * What to do about a namespace that lacks the search attributes the agents write (a plain `temporal
 * server start-dev`, a new Temporal Cloud namespace): the commands that register them, once. `starry
 * worker` registers them itself where it may; the clients say this where Temporal refuses a start.
 *
 * ```ts
 * missingSearchAttributes('default', ['AgentId']) // "namespace default has no search attribute AgentId, …"
 * ```
 */
export function missingSearchAttributes(
  namespace: string,
  names: readonly string[] = Object.keys(SEARCH_ATTRIBUTES),
): string {
  const flags = names.map((n) => `--name ${n} --type ${SEARCH_ATTRIBUTES[n] ?? 'Keyword'}`).join(' ');
  return (
    `namespace ${namespace} has no search attribute ${names.join(', ')}, which the agents write: register ${names.length > 1 ? 'them' : 'it'} once ` +
    `(\`temporal operator search-attribute create --namespace ${namespace} ${flags}\`; on Temporal Cloud, \`tcld namespace search-attributes add\`, ` +
    'see docs/DEPLOY.md), or start `starry worker` with the right to register them; then try again'
  );
}

/**
 * An agent's or a task's search attributes, from what it reports (`AgentEntity.reported`,
 * `TaskRun.reported`): a `null` value removes the attribute; a last error code, once written, stays.
 *
 * ```ts
 * upsertSearchAttributes(searchAttributes(agent.reported()));
 * ```
 */
export function searchAttributes(r: Reported): SearchAttributeUpdatePair[] {
  return [
    { key: AgentIdKey, value: r.agentId },
    { key: AgentStateKey, value: r.agentState },
    { key: TickIndexKey, value: r.tick },
    { key: TokensUsedKey, value: r.tokensUsed },
    ...(r.lastErrorCode ? [{ key: LastErrorCodeKey, value: r.lastErrorCode }] : []),
    { key: LockReasonKey, value: r.lockReason },
  ];
}

/**
 * The search attributes a workflow starts with (`typedSearchAttributes`), so that its first report
 * writes none: `searchAttributes` without the removals.
 *
 * ```ts
 * await client.workflow.start(agentWorkflow, { …, typedSearchAttributes: startAttributes(reportedOf(newAgentData(agentId))) });
 * ```
 */
export function startAttributes(r: Reported): SearchAttributePair[] {
  return searchAttributes(r).filter((p): p is SearchAttributePair => p.value !== null);
}
