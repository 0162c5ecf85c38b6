import { parseAgentConfig } from '../config';
import { normalizedError } from '../errors';
import { REPEAT_ALERT_SENTENCE } from './failure-facts';
import type { SafetyAlert } from './guide';
import { calculateSeverity, painGuide } from './pain';
import { ctx } from './test-support';

// The seeds' Concrete Scenario: fs.read on /root/secret.txt fails with EPERM.
const eperm = normalizedError({ code: 'EPERM', message: 'Permission Denied: /root/secret.txt', source: 'fs.read' });

/** Assert that each expected line occurs in `text`, in this order. */
function expectLinesInOrder(text: string, expected: string[]): void {
  const actual = text.split('\n');
  let from = 0;
  for (const line of expected) {
    const at = actual.indexOf(line, from);
    expect({ line, found: at >= 0 }).toEqual({ line, found: true });
    from = at + 1;
  }
}

describe('pain guide', () => {
  it('renders the seeds EPERM scenario as a critical System Pain Alert, line by line', () => {
    const text = painGuide.interpretPain(eperm, ctx);
    expectLinesInOrder(text, [
      '【System Pain Alert】',
      'Execution anomaly detected!',
      'Source: fs.read',
      'Message: EPERM: Permission Denied: /root/secret.txt',
      'Pain Level: 🔥🔥🔥 Critical Pain',
      'Status: Your action has been blocked. This causes "discomfort."',
      '',
      'Stop repeating this attempt. Analyze the pain source.',
      'Adjust your strategy in the next tick.',
    ]);
    expect(text.startsWith('【System Pain Alert】')).toBe(true);
    expect(text.endsWith('Adjust your strategy in the next tick.')).toBe(true);
  });

  it('adds the suggestion after the status and before the closing instructions', () => {
    const text = painGuide.interpretPain({ ...eperm, suggestion: 'Permitted roots: /w' }, ctx);
    expectLinesInOrder(text, [
      'Status: Your action has been blocked. This causes "discomfort."',
      'Suggestion: Permitted roots: /w',
      '',
      'Stop repeating this attempt. Analyze the pain source.',
    ]);
  });

  it('has no suggestion line when the Core gave none', () => {
    expect(painGuide.interpretPain(eperm, ctx)).not.toContain('Suggestion:');
  });

  it('grades EPERM critical, ENOENT medium and every other code low', () => {
    expect(calculateSeverity({ code: 'EPERM' })).toBe('🔥🔥🔥 Critical Pain');
    expect(calculateSeverity({ code: 'ENOENT' })).toBe('⚡ Medium Pain');
    expect(calculateSeverity({ code: 'EISDIR' })).toBe('💧 Low Pain');
    expect(calculateSeverity({ code: 'E_SCHEMA' })).toBe('💧 Low Pain');
    const enoent = normalizedError({ code: 'ENOENT', message: 'no such file', source: 'fs.read' });
    expect(painGuide.interpretPain(enoent, ctx)).toContain('Pain Level: ⚡ Medium Pain');
    const schema = normalizedError({ code: 'E_SCHEMA', message: 'path: required', source: 'core' });
    expect(painGuide.interpretPain(schema, ctx)).toContain('Pain Level: 💧 Low Pain');
  });

  it('contains the seeds repeat sentence in its repeat alert', () => {
    const alert: SafetyAlert = {
      kind: 'REPEAT_ALERT',
      toolName: 'fs.read',
      fingerprint: 'abcd',
      consecutiveFailures: 3,
      repeatCount: 3,
    };
    const text = painGuide.interpretAlert(alert, ctx);
    expect(text).toContain(REPEAT_ALERT_SENTENCE);
    expect(text).toContain('3 times in a row');
  });

  it('tells a frustrated agent how many calls failed, that the rest were not run, and to re-plan', () => {
    const alert: SafetyAlert = {
      kind: 'FRUSTRATION',
      toolName: 'fs.read',
      fingerprint: 'abcd',
      consecutiveFailures: 5,
      repeatCount: 1,
    };
    const text = painGuide.interpretAlert(alert, ctx);
    expect(text).toContain('5 consecutive failures');
    expect(text).toContain('The remaining tool calls of this turn were not executed.');
    expect(text).toContain('Stop the current path');
    expect(text).toContain('Re-plan');
  });

  it('frames failures as pain in its system prompt', () => {
    const prompt = painGuide.systemPrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'));
    expect(prompt).toContain('【System Pain Alert】');
    expect(prompt).toContain('When the goal is done, answer with your final answer and no tool call.');
  });
});
