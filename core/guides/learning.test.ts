import { parseAgentConfig } from '../config';
import { normalizedError } from '../errors';
import { REPEAT_ALERT_SENTENCE } from './failure-facts';
import type { SafetyAlert } from './guide';
import { learningGuide } from './learning';
import { ctx, eperm } from './test-support';

describe('learning guide', () => {
  it('reads EPERM as a boundary found while exploring', () => {
    expect(learningGuide.interpretPain(eperm, ctx)).toContain("This path is blocked. Let's find another.");
  });

  it('carries the facts: code, message, source and suggestion', () => {
    const text = learningGuide.interpretPain(eperm, ctx);
    expect(text).toContain('Tool fs.read failed: EPERM: Permission Denied (source fs.read).');
    expect(text).toContain('Suggestion: Permitted roots: /w');
  });

  it.each([
    ['ENOENT', 'Nothing is there'],
    ['EISDIR', 'List it with fs.list'],
    ['E_SCHEMA', 'wrong shape'],
    ['E_UNKNOWN_TOOL', 'The suggestion lists the ones you have'],
    ['E_INVALID_JSON', 'could not be parsed as JSON'],
    ['ETIMEDOUT', 'took too long'],
  ] as const)('gives %s its own lesson', (code, phrase) => {
    const text = learningGuide.interpretPain(normalizedError({ code, message: 'm', source: 's' }), ctx);
    expect(text).toContain(phrase);
    expect(text).toContain(`${code}: m (source s)`);
  });

  it('falls back to a generic lesson for codes it has no reading for', () => {
    const text = learningGuide.interpretPain(normalizedError({ code: 'E_INTERNAL', message: 'm', source: 's' }), ctx);
    expect(text).toContain('try a different approach');
  });

  it('contains the seeds sentence in its repeat alert', () => {
    const alert: SafetyAlert = {
      kind: 'REPEAT_ALERT',
      toolName: 'fs.read',
      fingerprint: 'f',
      consecutiveFailures: 3,
      repeatCount: 3,
    };
    expect(learningGuide.interpretAlert(alert, ctx)).toContain(REPEAT_ALERT_SENTENCE);
  });

  it('intervenes on frustration with the count, the skipped calls and a re-plan', () => {
    const alert: SafetyAlert = {
      kind: 'FRUSTRATION',
      toolName: 'fs.read',
      fingerprint: 'f',
      consecutiveFailures: 5,
      repeatCount: 1,
    };
    const text = learningGuide.interpretAlert(alert, ctx);
    expect(text).toContain('5 attempts in a row failed');
    expect(text).toContain('were not executed');
    expect(text).toContain('re-plan');
  });

  it('frames failures as boundaries in its system prompt', () => {
    const prompt = learningGuide.systemPrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'));
    expect(prompt).toContain('boundary');
  });
});
