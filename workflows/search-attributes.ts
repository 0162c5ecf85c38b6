/**
 * Search attributes on every agent and task workflow (docs/ARCHITECTURE.md#replay), so an operator can filter
 * `AgentState="SAFETY_LOCKOUT"` in the Web UI. The dev server registers them at start.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

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
