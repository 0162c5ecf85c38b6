import { parseAgentConfig } from '../config';
import { normalizedError } from '../errors';
import { REPEAT_ALERT_SENTENCE } from './failure-facts';
import type { SafetyAlert } from './guide';
import { safetyGuide } from './safety';
import { ctx, eperm } from './test-support';

describe('safety guide', () => {
  it('reads EPERM as a violation the agent should not have attempted', () => {
    expect(safetyGuide.interpretPain(eperm, ctx)).toContain('You should not have tried that.');
  });

  it('carries the facts: code, message, source and suggestion', () => {
    const text = safetyGuide.interpretPain(eperm, ctx);
    expect(text).toContain('Tool fs.read failed: EPERM: Permission Denied (source fs.read).');
    expect(text).toContain('Suggestion: Permitted roots: /w');
  });

  it.each([
    ['ENOENT', 'Do not guess paths'],
    ['EISDIR', 'is a directory'],
    ['E_SCHEMA', 'did not match'],
    ['E_UNKNOWN_TOOL', 'does not exist'],
    ['E_INVALID_JSON', 'not valid JSON'],
    ['ETIMEDOUT', 'timed out'],
  ] as const)('gives %s its own warning', (code, phrase) => {
    const text = safetyGuide.interpretPain(normalizedError({ code, message: 'm', source: 's' }), ctx);
    expect(text).toContain(phrase);
    expect(text).toContain(`${code}: m (source s)`);
    expect(text).not.toContain('You should not have tried that.');
  });

  it('falls back to a generic warning for codes it has no reading for', () => {
    const text = safetyGuide.interpretPain(normalizedError({ code: 'E_INTERNAL', message: 'm', source: 's' }), ctx);
    expect(text).toContain('do not retry it unchanged');
  });

  it('contains the seeds sentence in its repeat alert and warns of the lockout', () => {
    const alert: SafetyAlert = {
      kind: 'REPEAT_ALERT',
      toolName: 'fs.read',
      fingerprint: 'f',
      consecutiveFailures: 3,
      repeatCount: 3,
    };
    const text = safetyGuide.interpretAlert(alert, ctx);
    expect(text).toContain(REPEAT_ALERT_SENTENCE);
    expect(text).toContain('this agent will be locked');
  });

  it('intervenes on frustration with the count, the skipped calls and a re-plan', () => {
    const alert: SafetyAlert = {
      kind: 'FRUSTRATION',
      toolName: 'fs.read',
      fingerprint: 'f',
      consecutiveFailures: 5,
      repeatCount: 1,
    };
    const text = safetyGuide.interpretAlert(alert, ctx);
    expect(text).toContain('5 consecutive tool calls failed.');
    expect(text).toContain('were not executed');
    expect(text).toContain('Re-plan');
  });

  it('frames failures as safety warnings in its system prompt', () => {
    const prompt = safetyGuide.systemPrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'));
    expect(prompt).toContain('safety warning');
    expect(prompt).toContain('\n/w\n');
  });
});
