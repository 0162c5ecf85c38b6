import { ConfigError } from '../errors';
import { defineGuide, type GuideSpec } from './define';
import { BUILTIN_GUIDES, getGuide, GuideRegistry, guideIds, painGuide } from './index';
import { carefulSpec, ctx, eperm, thrown } from './test-support';

const spec = carefulSpec;

describe('defineGuide', () => {
  it('returns a frozen guide that does what its functions say, with an empty description when none is given', () => {
    const guide = defineGuide(spec);
    expect(guide.interpretPain(eperm, ctx)).toBe('CAREFUL: EPERM');
    expect(Object.isFrozen(guide)).toBe(true);
    const { description: _, ...bare } = spec;
    expect(defineGuide(bare).description).toBe('');
  });

  it.each(['', 'Careful', '1st', 'two words', 'x'.repeat(65), 'é'])('refuses the id %j, saying what an id is', (id) => {
    const err = thrown(() => defineGuide({ ...spec, id }));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(
      `defineGuide: id ${JSON.stringify(id)} is not a guide id: use a lowercase letter, then up to 63 lowercase letters, digits, "_" or "-"`,
    );
  });

  it('accepts ids with digits, "_" and "-" up to 64 characters', () => {
    for (const id of ['a', 'careful-v2', 'team_a-guide', `a${'b'.repeat(63)}`])
      expect(defineGuide({ ...spec, id }).id).toBe(id);
  });

  it('names every function that is missing', () => {
    const err = thrown(() => defineGuide({ id: 'half', systemPrompt: spec.systemPrompt } as unknown as GuideSpec));
    expect(err.message).toBe('defineGuide: guide "half" needs interpretPain, interpretAlert as functions');
  });

  it('refuses what is not an object', () => {
    expect(() => defineGuide(undefined as unknown as GuideSpec)).toThrow(/expected an object \{ id, systemPrompt/);
  });

  it('makes the five shipped guides', () => {
    expect(BUILTIN_GUIDES.every((g) => Object.isFrozen(g))).toBe(true);
  });
});

describe('a guide registry', () => {
  it('lists the shipped guides first, then those registered, and finds each', () => {
    const registry = new GuideRegistry();
    const careful = defineGuide(spec);
    registry.register(careful);
    expect(registry.ids()).toEqual(['pain', 'safety', 'learning', 'debugging', 'neutral', 'careful']);
    expect(registry.get('careful')).toBe(careful);
  });

  it('refuses an id a shipped guide has, and one registered before, saying where it came from', () => {
    const registry = new GuideRegistry();
    expect(() => registry.register({ ...painGuide }, 'plugin module "x"')).toThrow(
      'guide id "pain" (from plugin module "x") is already taken by a built-in guide: give your guide another id (e.g. "pain-own")',
    );
    registry.register(defineGuide(spec));
    expect(() => registry.register(defineGuide(spec))).toThrow('guide id "careful" is already taken: give your guide');
  });

  it('names an unknown id and lists what it has, its own guides included', () => {
    const registry = new GuideRegistry();
    registry.register(defineGuide(spec));
    const err = thrown(() => registry.get('zen'));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(
      'Unknown guide "zen". This worker has: pain, safety, learning, debugging, neutral, careful.',
    );
  });

  it('registerGuide adds to the registry tasks read, once per id', () => {
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const fresh = require('./index') as typeof import('./index');
      fresh.registerGuide(fresh.defineGuide(spec));
      expect(fresh.guideIds()).toContain('careful');
      expect(fresh.getGuide('careful').interpretPain(eperm, ctx)).toBe('CAREFUL: EPERM');
      expect(() => fresh.registerGuide(fresh.defineGuide(spec))).toThrow(/"careful" is already taken/);
    });
    // This module's registry is another's: nothing leaked into it.
    expect(guideIds()).not.toContain('careful');
    expect(() => getGuide('careful')).toThrow('Unknown guide "careful"');
  });
});
