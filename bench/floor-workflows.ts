/**
 * The floor of `bench/throughput.ts`: what Temporal itself costs for one iteration of two activities
 * that do nothing, on the same server and worker settings as the agents. Not part of the runtime.
 */
import { proxyActivities } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '1 minute' });

/** `iterations` times: two no-op activities, one after the other (an agent tick is an LLM call, then a tool). */
export async function floorWorkflow(iterations: number): Promise<void> {
  for (let i = 0; i < iterations; i++) {
    await noop();
    await noop();
  }
}
