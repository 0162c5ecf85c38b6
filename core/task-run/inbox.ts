/**
 * A task run's inbox (seeds: human override, the `message` signal): human follow-ups checked like at the
 * agent, at most `LIMITS.messagesPerRun` a run, that enter the context at the start of the next tick.
 * Those the LLM never saw go back to the agent when the run ends, or on to the next run when the task
 * continues as new. Plain data.
 */
import { humanMessageSchema, LIMITS, type HumanMessage } from '../payloads';

export interface InboxData {
  /** Messages waiting for the next tick, in arrival order. */
  waiting: HumanMessage[];
  /** Messages taken this run (the task's before it continued as new included). */
  received: number;
}

export class RunInbox {
  constructor(readonly data: InboxData) {}

  /** A run's inbox: the messages that arrived before it, and the count the run before it had taken. */
  static of(messages: readonly HumanMessage[] = [], received = 0): RunInbox {
    return new RunInbox({ waiting: [...messages], received });
  }

  /** A message for the next tick. Returns why it was ignored, or undefined when it was taken. */
  receive(raw: unknown): string | undefined {
    const m = humanMessageSchema().safeParse(raw);
    if (!m.success) return m.error.message;
    if (this.data.received >= LIMITS.messagesPerRun) return `more than ${LIMITS.messagesPerRun} this run`;
    this.data.received++;
    this.data.waiting.push(m.data);
    return undefined;
  }

  /** The waiting messages, oldest first; the inbox keeps none of them. */
  take(): HumanMessage[] {
    return this.data.waiting.splice(0);
  }
}

/** How a human message reads in the context. */
export function messageText(m: HumanMessage): string {
  return `Message from ${m.by ?? 'a human operator'}: ${m.text}`;
}
