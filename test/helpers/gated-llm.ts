/**
 * A worker whose LLM activity waits at a gate the test opens: "while a task's LLM call is in flight,
 * do X" becomes deterministic, without timing. Everything else is the real thing (the scripted
 * controller answers once the gate opens, the real tool activities, the real workflows); the gated call
 * heartbeats and honours cancellation like the real one.
 */
import { Context } from '@temporalio/activity';
import { Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { AgentClient } from '../../client/agent-client';
import type { LlmRequest, LlmResponse } from '../../core/llm';
import { address, uniqueId, type Harness } from './harness';

interface Waiter {
  req: LlmRequest;
  open: () => void;
}

/**
 * Holds the LLM calls of chosen agents until released.
 *
 * ```ts
 * gate.hold(agentId);
 * await h.agents.submit(agentId, …);
 * await gate.arrived(agentId);   // the task's LLM call is now in flight, waiting
 * gate.release(agentId);         // it answers; later calls pass through
 * ```
 */
export class LlmGate {
  private readonly held = new Set<string>();
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly arrivals = new Map<string, Array<(req: LlmRequest) => void>>();
  /** Calls that saw their cancellation while waiting, by agent. */
  readonly cancelled: LlmRequest[] = [];

  hold(agentId: string): void {
    this.held.add(agentId);
  }

  /** Open the gate for the agent: the waiting calls proceed, later ones pass through until `hold` again. */
  release(agentId: string): void {
    this.held.delete(agentId);
    for (const w of this.waiting.get(agentId)?.splice(0) ?? []) w.open();
  }

  /** Resolves with the request once one of the agent's LLM calls is waiting at the gate. */
  arrived(agentId: string): Promise<LlmRequest> {
    const w = this.waiting.get(agentId)?.[0];
    if (w) return Promise.resolve(w.req);
    return new Promise((resolve) => {
      const list = this.arrivals.get(agentId) ?? [];
      list.push(resolve);
      this.arrivals.set(agentId, list);
    });
  }

  /** Wrap the real `llm` activity. */
  wrap(llm: (req: LlmRequest) => Promise<LlmResponse>): (req: LlmRequest) => Promise<LlmResponse> {
    return async (req) => {
      if (this.held.has(req.agentId)) await this.wait(req);
      return llm(req);
    };
  }

  private async wait(req: LlmRequest): Promise<void> {
    const ctx = Context.current();
    let opened = false;
    const released = new Promise<void>((resolve) => {
      const list = this.waiting.get(req.agentId) ?? [];
      list.push({ req, open: () => ((opened = true), resolve()) });
      this.waiting.set(req.agentId, list);
    });
    for (const notify of this.arrivals.get(req.agentId)?.splice(0) ?? []) notify(req);
    try {
      while (!opened) {
        ctx.heartbeat({ gated: true });
        await Promise.race([released, ctx.sleep(200)]);
      }
    } catch (err) {
      this.cancelled.push(req);
      const list = this.waiting.get(req.agentId) ?? [];
      this.waiting.set(req.agentId, list.filter((w) => w.req !== req));
      throw err;
    }
  }
}

/** A harness (same shape as `startHarness`) whose worker's LLM calls go through a gate. */
export async function startGatedHarness(opts: { name: string; continueAsNewAfterEvents?: number }): Promise<Harness & { gate: LlmGate }> {
  const gate = new LlmGate();
  const taskQueue = uniqueId(`tq-${opts.name}`);
  const native = await NativeConnection.connect({ address: address() });
  const activities = createActivities();
  const bundle = process.env.STARRY_WORKFLOW_BUNDLE;
  // Same settings as workers/worker.ts, with the LLM activity wrapped.
  const worker = await Worker.create({
    connection: native,
    taskQueue,
    activities: { ...activities, llm: gate.wrap(activities.llm) },
    maxHeartbeatThrottleInterval: '500 milliseconds',
    defaultHeartbeatThrottleInterval: '500 milliseconds',
    ...(bundle ? { workflowBundle: { codePath: bundle } } : { workflowsPath: require.resolve('../../workflows') }),
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: address() });
  const agents = new AgentClient({ connection, taskQueue, continueAsNewAfterEvents: opts.continueAsNewAfterEvents });
  return {
    agents,
    connection,
    taskQueue,
    worker,
    gate,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
      await native.close();
    },
  };
}
