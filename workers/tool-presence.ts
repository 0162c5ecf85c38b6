/**
 * A tool worker's presence (core/tool-presence.ts): beside its tool activities, every tool worker
 * process polls the presence queue of its tool queue, where a workflow asks whether any tool worker
 * is there when a call waits. The presence worker has slots of its own, so a fleet whose tool slots
 * are all busy still answers; it stops with the tool worker.
 */
import { Worker, type NativeConnection } from '@temporalio/worker';
import { createPresenceActivities } from '../activities/tool-presence';
import { presenceQueueOf } from '../core/tool-presence';

/** `tools`, its `run` made to run the presence worker of its queue beside it, and `shutdown` to stop both. */
export async function withPresence(
  tools: Worker,
  how: { connection: NativeConnection; namespace: string; toolQueue: string },
): Promise<Worker> {
  const { identity } = tools.options;
  const presence = await Worker.create({
    connection: how.connection,
    namespace: how.namespace,
    taskQueue: presenceQueueOf(how.toolQueue),
    identity,
    activities: createPresenceActivities(identity),
    maxConcurrentActivityTaskExecutions: 8,
  });
  const run = tools.run.bind(tools);
  const shutdown = tools.shutdown.bind(tools);
  tools.run = async () => {
    const answering = presence.run();
    try {
      await run();
    } finally {
      // The tool worker stopped (or failed): its presence goes with it, so no workflow waits on it.
      if (presence.getState() === 'RUNNING') presence.shutdown();
      await answering;
    }
  };
  tools.shutdown = () => {
    // Gone from the presence queue first: a call that waits from now on is not told a worker is here.
    if (presence.getState() === 'RUNNING') presence.shutdown();
    shutdown();
  };
  return tools;
}
