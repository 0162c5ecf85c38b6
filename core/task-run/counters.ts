/**
 * What a task run counts (seeds: the safety ladder's counters and the loop cap): the breaker counters,
 * which carry across the agent's tasks; the tick the loop cap counts from (the task's start or its last
 * resume); the last error code; and the oldest records a run no longer carries. Plain data: the next run
 * takes it over when the task continues as new, so neither the loop cap nor the breakers start over.
 */
import type { AgentConfig } from '../config';
import { SafetyMonitor, type LockVerdict, type SafetyCounters } from '../safety-monitor';
import { historyLimit } from '../safety-rungs';
import type { BreakerFacts } from '../telemetry';
import type { TaskCheckpoint } from '../types';
import type { TaskRunInput } from './io';
import { verifying } from './verify';

export interface CountersData {
  counters: SafetyCounters;
  /** The tick the loop cap counts from. */
  allowanceStart: number;
  /** Oldest tool calls and injections no longer carried. */
  omitted: { toolCalls: number; injections: number };
  lastErrorCode?: string;
}

type Safety = AgentConfig['safety'];

export class RunCounters {
  constructor(readonly data: CountersData) {}

  /** A run's counts: the agent's counters, and what the run before it had counted when the task continued as new. */
  static of(input: Pick<TaskRunInput, 'counters' | 'continued'>, cp: TaskCheckpoint): RunCounters {
    const c = input.continued;
    return new RunCounters({
      counters: input.counters,
      // Ticks since the start (or the resume) are what the loop cap counts; continuing as new is neither.
      allowanceStart: c?.allowanceStart ?? cp.ticks,
      omitted: c ? { ...c.omitted } : { toolCalls: 0, injections: 0 },
      ...(c?.lastErrorCode ? { lastErrorCode: c.lastErrorCode } : {}),
    });
  }

  /**
   * Whether the next tick may start: the loop cap (per allowance) and Temporal's history limits, before
   * the server would terminate the task with nothing kept. Returns the lock and what it counted, or undefined.
   */
  tickLock(
    cp: TaskCheckpoint,
    safety: Safety,
    history: { events: number; bytes: number },
  ): { lock: LockVerdict; facts: BreakerFacts } | undefined {
    // The verification round asks about an answer already given: it is not a tick the loop cap counts,
    // so a final answer at the cap's last tick is verified and completes.
    const counted = cp.ticks - this.data.allowanceStart + (verifying(cp) ? 0 : 1);
    const start = SafetyMonitor.onEventLoopStart(safety, { tick: counted });
    if (start.lock) return { lock: start.lock, facts: { tick: counted } };
    const limit = historyLimit(history);
    if (limit?.lock) return { lock: limit.lock, facts: { historyEvents: history.events } };
    return undefined;
  }

  /** A tool call's outcome counted by the breakers (`afterToolExecution`): their verdict, the counters kept. */
  afterTool(safety: Safety, op: { toolName: string; fingerprint: string; success: boolean }) {
    const verdict = SafetyMonitor.afterToolExecution(safety, this.data.counters, op);
    this.data.counters = verdict.counters;
    return verdict;
  }

  /** An error the run met (the last one is reported with its counts). */
  failedWith(code: string): void {
    this.data.lastErrorCode = code;
  }

  /** The last error code, when there is one. */
  lastError(): { lastErrorCode?: string } {
    return this.data.lastErrorCode ? { lastErrorCode: this.data.lastErrorCode } : {};
  }

  /** Records a run dropped from what it hands on. */
  omit(dropped: { toolCalls: number; injections: number }): void {
    const { omitted } = this.data;
    this.data.omitted = {
      toolCalls: omitted.toolCalls + dropped.toolCalls,
      injections: omitted.injections + dropped.injections,
    };
  }
}
