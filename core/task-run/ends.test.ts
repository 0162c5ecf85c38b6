import { normalizedError } from '../errors';
import { cancelled, failed, suspended } from './ends';

describe('how a task run ends', () => {
  it('suspends on a breaker, the agent in the state the lock names', () => {
    const lock = { agentState: 'STOPPED' as const, reason: { code: 'BUDGET_EXHAUSTED' as const, message: 'spent' } };
    expect(suspended(lock)).toEqual({ outcome: 'SUSPENDED', agentState: 'STOPPED', lock });
  });

  it('fails on an error, leaving the agent waiting unless the error is fatal', () => {
    const transient = normalizedError({ code: 'E_RATE_LIMIT', message: '429', source: 'llm openai' });
    expect(failed(transient)).toEqual({ outcome: 'FAILED', agentState: 'WAITING_FOR_EVENT', error: transient });
  });

  it('pauses the agent on a fatal error, with a FATAL lock that alerts', () => {
    const fatal = normalizedError({ code: 'E_AUTH', message: '401', source: 'llm openai' });
    expect(failed(fatal)).toEqual({
      outcome: 'FAILED',
      agentState: 'ERROR_PAUSED',
      error: fatal,
      lock: { agentState: 'ERROR_PAUSED', reason: { code: 'FATAL', message: 'E_AUTH: 401' } },
    });
  });

  it('is cancelled by a halt: the agent STOPPED, the reason SYSTEM_HALT', () => {
    expect(cancelled()).toEqual({
      outcome: 'CANCELLED',
      agentState: 'STOPPED',
      reason: { code: 'SYSTEM_HALT', message: 'stopped by a human' },
    });
  });
});
