/**
 * What the trace viewer of `starry dev --otel` asks Temporal of a task whose trace has no outcome yet:
 * its state (the task's `AgentState` search attribute, e.g. WAITING_FOR_APPROVAL), so a task that waits
 * for a human shows as such (dev/trace-viewer.ts).
 */
import { Client, Connection } from '@temporalio/client';
import { AgentIdKey, AgentStateKey } from '../workflows/search-attributes';
import type { TaskState } from './trace-viewer';

/**
 * A lookup of a task's state by workflow id on the server `env()` names when first asked (the dev
 * server starts after the viewer); `close` ends its connection.
 */
export function taskStateLookup(env: () => { address: string; namespace: string }): {
  taskState: (workflowId: string) => Promise<TaskState | undefined>;
  close: () => Promise<void>;
} {
  let client: Promise<Client> | undefined;
  const connect = () =>
    (client ??= (async () => {
      const { address, namespace } = env();
      return new Client({ connection: await Connection.connect({ address }), namespace });
    })());
  return {
    async taskState(workflowId) {
      const d = await (await connect()).workflow.getHandle(workflowId).describe();
      const state = d.typedSearchAttributes.get(AgentStateKey);
      const agentId = d.typedSearchAttributes.get(AgentIdKey);
      return state ? { state, ...(agentId ? { agentId } : {}) } : undefined;
    },
    close: async () => {
      if (client) await (await client.catch(() => undefined))?.connection.close();
    },
  };
}
