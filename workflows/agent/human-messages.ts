/**
 * The agent's `message`: a human follow-up forwarded to the running task, or kept for the next task when
 * none runs (or the task had just ended). The update answers where it went; the signal cannot answer,
 * so a refused one (too many) is logged and dropped.
 */
import { setHandler } from '@temporalio/workflow';
import type { AgentEntity } from '../../core/agent-entity';
import type { MessageResult } from '../../core/contract';
import { humanMessageSchema, parsePayload, type HumanMessage } from '../../core/payloads';
import { messageSignal, messageUpdate } from '../messages';
import { typed } from '../typed';
import { ifValid, refusedIsLogged, signalTask } from './handling';

/** Handle `message`, as an update and as a signal. */
export function listenMessages(agent: AgentEntity): void {
  const message = async (m: HumanMessage): Promise<MessageResult> => {
    const { forwardTo } = agent.message(m);
    const taskId = agent.data.current?.task.taskId;
    if (forwardTo && (await signalTask(forwardTo, (handle) => handle.signal(messageSignal, m))))
      return { delivered: 'running task', taskId };
    if (forwardTo) agent.keepMessage(m);
    return { delivered: 'next task' };
  };
  const messageHelp = 'A human follow-up for the running task: {text, by?}; kept for the next task when none runs.';
  setHandler(messageUpdate, (raw) => message(parsePayload(humanMessageSchema(), raw, 'message')), {
    validator: (raw) =>
      typed(() => {
        parsePayload(humanMessageSchema(), raw, 'message');
        agent.validateMessage();
      }),
    description: messageHelp,
  });
  setHandler(
    messageSignal,
    (raw) => ifValid(humanMessageSchema(), raw, 'message', (m) => refusedIsLogged('message', () => message(m))),
    { description: messageHelp },
  );
}
