import { parseAgentConfig } from '../config';
import { normalizedError } from '../errors';
import { debuggingGuide } from './debugging';
import { REPEAT_ALERT_SENTENCE } from './failure-facts';
import type { PainContext, SafetyAlert } from './guide';
import { ctx as secretRead, eperm } from './test-support';

const ctx: PainContext = { ...secretRead, tick: 2 };

describe('debugging guide', () => {
  it('reads EPERM as diagnostic data about permissions', () => {
    expect(debuggingGuide.interpretPain(eperm, ctx)).toContain('Permission issue detected. Check file ownership.');
  });

  it('lays the facts out as a report, arguments and counters included', () => {
    const text = debuggingGuide.interpretPain(eperm, ctx).split('\n');
    expect(text).toEqual(
      expect.arrayContaining([
        'tool: fs.read',
        'code: EPERM',
        'source: fs.read',
        'message: Permission Denied',
        'suggestion: Permitted roots: /w',
        'args: {"path":"/root/secret.txt"}',
        'tick: 2, consecutive failures: 1',
      ]),
    );
  });

  it('cuts long arguments so a large write payload is not echoed back', () => {
    const text = debuggingGuide.interpretPain(eperm, { ...ctx, args: { path: '/w/a', content: 'x'.repeat(5000) } });
    const argsLine = text.split('\n').find((l) => l.startsWith('args: '));
    expect(argsLine!.length).toBeLessThan(260);
    expect(argsLine).toMatch(/… \(\d+ chars\)$/);
  });

  it('reports arguments it cannot serialise as none', () => {
    expect(debuggingGuide.interpretPain(eperm, { ...ctx, args: undefined })).toContain('args: (none)');
    expect(debuggingGuide.interpretPain(eperm, { ...ctx, args: 10n })).toContain('args: (none)');
  });

  it.each([
    ['ENOENT', 'Missing path detected'],
    ['EISDIR', 'Type mismatch'],
    ['E_SCHEMA', 'schema mismatch'],
    ['E_UNKNOWN_TOOL', 'Call only a tool the suggestion lists'],
    ['E_INVALID_JSON', 'did not parse'],
    ['ETIMEDOUT', 'Timeout'],
  ] as const)('gives %s its own diagnosis', (code, phrase) => {
    const text = debuggingGuide.interpretPain(normalizedError({ code, message: 'm', source: 's' }), ctx);
    expect(text).toContain(phrase);
    expect(text).toContain(`code: ${code}`);
    expect(text).not.toContain('suggestion:');
  });

  it('falls back to an unclassified diagnosis for codes it has no reading for', () => {
    const text = debuggingGuide.interpretPain(normalizedError({ code: 'E_INTERNAL', message: 'm', source: 's' }), ctx);
    expect(text).toContain('Unclassified failure');
  });

  it('contains the seeds sentence in its repeat alert, with the fingerprint as evidence', () => {
    const alert: SafetyAlert = {
      kind: 'REPEAT_ALERT',
      toolName: 'fs.read',
      fingerprint: '0123456789abcdef',
      consecutiveFailures: 3,
      repeatCount: 3,
    };
    const text = debuggingGuide.interpretAlert(alert, ctx);
    expect(text).toContain(REPEAT_ALERT_SENTENCE);
    expect(text).toContain('fingerprint 0123456789abcdef');
  });

  it('intervenes on frustration with the count, the skipped calls and a re-plan', () => {
    const alert: SafetyAlert = {
      kind: 'FRUSTRATION',
      toolName: 'fs.read',
      fingerprint: 'f',
      consecutiveFailures: 5,
      repeatCount: 1,
    };
    const text = debuggingGuide.interpretAlert(alert, ctx);
    expect(text).toContain('5 consecutive failures');
    expect(text).toContain('were not executed');
    expect(text).toContain('re-plan');
  });

  it('frames failures as diagnostic reports in its system prompt', () => {
    const prompt = debuggingGuide.systemPrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'));
    expect(prompt).toContain('diagnostic report');
  });
});
