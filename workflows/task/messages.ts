/** The task's messages: a human's halt (from the Web UI) and follow-ups, decisions on its waiting calls, its queries. */
import { log, setHandler } from '@temporalio/workflow';
import { approvalDecisionSchema } from '../../core/approval';
import {
  approvalDecidedSignal,
  haltSignal,
  messageSignal,
  taskProgressQuery,
  taskStateQuery,
  taskStatusQuery,
} from '../messages';
import type { TaskScope } from './scope';

export function listen({ run, calls }: TaskScope): void {
  setHandler(
    haltSignal,
    () => {
      run.halt();
      calls.cancel();
    },
    {
      description:
        'Stop this task now: cancels the call in flight and ends the task (SYSTEM_HALT sent to the agent does this for you). Payload {by?, note?}.',
    },
  );
  // A message is checked like at the agent, and bounded per run.
  setHandler(
    messageSignal,
    (raw) => {
      const refused = run.receive(raw);
      if (refused) log.warn('ignored a message signal', { reason: refused });
    },
    { description: 'A human follow-up {text, by?} (sent by its agent): appended before the next LLM call.' },
  );
  setHandler(
    approvalDecidedSignal,
    (raw) => {
      const parsed = approvalDecisionSchema().safeParse(raw);
      const refused = parsed.success ? run.decide(parsed.data) : parsed.error.message;
      if (refused) log.warn('ignored an approval decision', { reason: refused });
    },
    { description: 'Internal: a human decision on a waiting call, forwarded by the agent. Not for humans.' },
  );
  setHandler(taskProgressQuery, () => run.progress(), {
    description: 'The task’s live counts: tick, tokens (this run and in all), counters, last error code.',
  });
  setHandler(taskStatusQuery, () => run.status(), {
    description:
      'The task so far: everything its result has yet, its counters, the last error code and whether a halt arrived.',
  });
  setHandler(taskStateQuery, () => run.status(), { description: 'Deprecated: taskStatus, under its 0.1 name.' });
}
