/**
 * A worker (the real one, from workers/worker.ts) whose LLM activity waits at a gate the test opens: "while a task's
 * LLM call is in flight,
 * do X" becomes deterministic, without timing. Everything else is the real thing (the scripted
 * controller answers once the gate opens, the real tool activities, the real workflows); the gated call
 * heartbeats and honours cancellation like the real one.
 */
import { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { LlmCallInput, LlmRequest } from '../../core/llm';
import { startHarness, type Harness, type HarnessOptions } from './harness';
import { resolveLlmInput } from './workflow-history';

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

  /**
   * A Temporal activity interceptor: a held agent's `llm` call waits at the gate, then runs the real
   * activity.
   */
  interceptor(): ActivityInterceptorsFactory {
    return () => ({
      inbound: {
        execute: async (input, next) => {
          const call = input.args[0] as LlmCallInput;
          // The test sees what the provider will receive: the context resolved through the store.
          if (Context.current().info.activityType === 'llm' && this.held.has(call.agentId))
            await this.wait(await resolveLlmInput(call));
          return next(input);
        },
      },
    });
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
      this.waiting.set(
        req.agentId,
        list.filter((w) => w.req !== req),
      );
      throw err;
    }
  }
}

/** A harness whose worker's LLM calls go through a gate; otherwise the same as `startHarness`. */
export async function startGatedHarness(
  opts: Omit<HarnessOptions, 'interceptors'>,
): Promise<Harness & { gate: LlmGate }> {
  const gate = new LlmGate();
  const harness = await startHarness({ ...opts, interceptors: { activity: [gate.interceptor()] } });
  return { ...harness, gate };
}
