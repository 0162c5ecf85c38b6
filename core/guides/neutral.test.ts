import { parseAgentConfig } from '../config';
import { ERROR_CODES, normalizedError } from '../errors';
import { REPEAT_ALERT_SENTENCE } from './failure-facts';
import type { SafetyAlert } from './guide';
import { neutralGuide } from './neutral';
import { ctx } from './test-support';

const eperm = normalizedError({ code: 'EPERM', message: 'operation not permitted', source: 'fs.read' });
const PAIN_WORDS = /pain|discomfort|🔥|⚡|💧|hurt|feel/i;

describe('neutral guide', () => {
  it('states the failure as one factual sentence', () => {
    expect(neutralGuide.interpretPain(eperm, ctx)).toBe(
      'Tool fs.read failed: EPERM: operation not permitted (source fs.read).',
    );
  });

  it('appends the Core suggestion when there is one', () => {
    expect(neutralGuide.interpretPain({ ...eperm, suggestion: 'Permitted roots: /w' }, ctx)).toBe(
      'Tool fs.read failed: EPERM: operation not permitted (source fs.read). Suggestion: Permitted roots: /w',
    );
  });

  it('uses no pain words for any code, alert or prompt', () => {
    for (const code of ERROR_CODES) {
      const text = neutralGuide.interpretPain(
        normalizedError({ code, message: 'm', source: 's', suggestion: 'x' }),
        ctx,
      );
      expect(text).not.toMatch(PAIN_WORDS);
    }
    const base = { toolName: 'fs.read', fingerprint: 'f', consecutiveFailures: 5, repeatCount: 3 };
    expect(neutralGuide.interpretAlert({ ...base, kind: 'REPEAT_ALERT' }, ctx)).not.toMatch(PAIN_WORDS);
    expect(neutralGuide.interpretAlert({ ...base, kind: 'FRUSTRATION' }, ctx)).not.toMatch(PAIN_WORDS);
    expect(neutralGuide.systemPrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'))).not.toMatch(
      PAIN_WORDS,
    );
  });

  it('gives exactly the seeds sentence as its repeat alert', () => {
    const alert: SafetyAlert = {
      kind: 'REPEAT_ALERT',
      toolName: 'fs.read',
      fingerprint: 'f',
      consecutiveFailures: 3,
      repeatCount: 3,
    };
    expect(neutralGuide.interpretAlert(alert, ctx)).toBe(REPEAT_ALERT_SENTENCE);
  });

  it('states the frustration facts: how many failed, that the rest were skipped, what to do', () => {
    const alert: SafetyAlert = {
      kind: 'FRUSTRATION',
      toolName: 'fs.read',
      fingerprint: 'f',
      consecutiveFailures: 5,
      repeatCount: 1,
    };
    expect(neutralGuide.interpretAlert(alert, ctx)).toBe(
      'SYSTEM INTERVENTION: 5 consecutive failed tool calls. The remaining tool calls of this turn were skipped. ' +
        'Stop the current path and choose a different approach.',
    );
  });
});
