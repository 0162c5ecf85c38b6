import fc from 'fast-check';
import { parseAgentConfig } from '../config';
import { ERROR_CODES, normalizedError } from '../errors';
import type { SafetyAlert } from './guide';
import { BUILTIN_GUIDES, getGuide, guideIds, REPEAT_ALERT_SENTENCE } from './index';
import { ctx, eperm } from './test-support';

const agent = parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json');
const repeat: SafetyAlert = {
  kind: 'REPEAT_ALERT',
  toolName: 'fs.read',
  fingerprint: 'f',
  consecutiveFailures: 3,
  repeatCount: 3,
};
const frustration: SafetyAlert = {
  kind: 'FRUSTRATION',
  toolName: 'fs.read',
  fingerprint: 'f',
  consecutiveFailures: 5,
  repeatCount: 1,
};

describe('guide registry', () => {
  it('ships pain, safety, learning, debugging and neutral, each under its own id', () => {
    expect(guideIds()).toEqual(['pain', 'safety', 'learning', 'debugging', 'neutral']);
    for (const id of guideIds()) expect(getGuide(id).id).toBe(id);
    expect(BUILTIN_GUIDES.map((g) => g.id)).toEqual(guideIds());
  });

  it('names the unknown id and lists the known ones when a guide does not exist', () => {
    expect(() => getGuide('x')).toThrow(
      'Unknown guide "x". This worker has: pain, safety, learning, debugging, neutral.',
    );
  });

  it('does not mistake members of Object for guides', () => {
    expect(() => getGuide('toString')).toThrow('Unknown guide "toString"');
    expect(() => getGuide('__proto__')).toThrow('Unknown guide "__proto__"');
  });

  it.each(guideIds())('%s puts the seeds repeat sentence in its repeat alert', (id) => {
    expect(getGuide(id).interpretAlert(repeat, ctx)).toContain(REPEAT_ALERT_SENTENCE);
  });

  it.each(guideIds())('%s always carries the code, message, source and suggestion of a failure', (id) => {
    for (const code of ERROR_CODES) {
      const error = normalizedError({
        code,
        message: 'the message',
        source: 'the.source',
        suggestion: 'the suggestion',
      });
      const text = getGuide(id).interpretPain(error, ctx);
      for (const fact of [code, 'the message', 'the.source', 'the suggestion']) expect(text).toContain(fact);
    }
  });

  it.each(guideIds())('%s tells the model how to finish and lists the roots in its system prompt', (id) => {
    const prompt = getGuide(id).systemPrompt(agent);
    expect(prompt).toContain('When the goal is done, answer with your final answer and no tool call.');
    expect(prompt).toContain('Permitted workspace roots:\n/w\n');
  });

  it.each(guideIds())(
    '%s lists only the offered tools, and ends with the owner’s instructions after its own rules',
    (id) => {
      const owned = parseAgentConfig(
        { workspace: ['/w'], instructions: 'Answer in French.', tools: { allow: ['fs.read', 'fs.list'] } },
        'scripted:/x.json',
      );
      const prompt = getGuide(id).systemPrompt(owned);
      expect(prompt).toContain('Tools: fs.read, fs.list.\n');
      expect(
        prompt.endsWith(
          'When the goal is done, answer with your final answer and no tool call.\n\nInstructions for this agent, from its owner (the rules above still hold):\nAnswer in French.',
        ),
      ).toBe(true);
      expect(getGuide(id).systemPrompt(agent)).not.toContain('Instructions for this agent');
    },
  );

  it('reads E_LIMIT as a resource limit in the guides that interpret codes', () => {
    const hit = normalizedError({
      code: 'E_LIMIT',
      message: "E_LIMIT: 'sh' was stopped at its CPU time limit",
      source: 'shell.run',
    });
    for (const id of ['debugging', 'learning', 'safety'])
      expect(getGuide(id).interpretPain(hit, ctx)).toMatch(/limit/i);
    expect(getGuide('debugging').interpretPain(hit, ctx)).toContain('Resource limit reached');
  });

  it('gives the same EPERM a different reading in every guide', () => {
    const texts = guideIds().map((id) => getGuide(id).interpretPain(eperm, ctx));
    expect(new Set(texts).size).toBe(texts.length);
    const prompts = guideIds().map((id) => getGuide(id).systemPrompt(agent));
    expect(new Set(prompts).size).toBe(prompts.length);
  });

  it('gives the same input the same output, every guide and every call', () => {
    const error = fc.record({
      code: fc.constantFrom(...ERROR_CODES),
      message: fc.string(),
      source: fc.string(),
      suggestion: fc.option(fc.string(), { nil: undefined }),
    });
    const context = fc.record({
      tick: fc.nat(),
      toolName: fc.string(),
      args: fc.jsonValue(),
      consecutiveFailures: fc.nat(),
      workspace: fc.array(fc.string()),
    });
    const alert = fc.record({
      kind: fc.constantFrom('REPEAT_ALERT' as const, 'FRUSTRATION' as const),
      toolName: fc.string(),
      fingerprint: fc.string(),
      consecutiveFailures: fc.nat(),
      repeatCount: fc.nat(),
    });
    fc.assert(
      fc.property(fc.constantFrom(...BUILTIN_GUIDES), error, context, alert, (guide, e, c, a) => {
        const err = normalizedError(e);
        expect(guide.interpretPain(err, c)).toBe(guide.interpretPain(err, c));
        expect(guide.interpretAlert(a, c)).toBe(guide.interpretAlert(a, c));
      }),
    );
    for (const guide of BUILTIN_GUIDES) {
      expect(guide.systemPrompt(agent)).toBe(guide.systemPrompt(agent));
      expect(guide.interpretAlert(frustration, ctx)).toBe(guide.interpretAlert(frustration, ctx));
    }
  });
});
