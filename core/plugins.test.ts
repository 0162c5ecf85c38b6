import { ConfigError } from './errors';
import { defineGuide, guideIds } from './guides';
import { carefulSpec, ctx, eperm, thrown } from './guides/test-support';
import { pluginOf, refusedChoices } from './plugins';

const spec = carefulSpec;

describe('a plugin module’s exports', () => {
  it('are read from its named exports, or else from its default export', () => {
    const named = pluginOf({ guides: [defineGuide(spec)] }, 'm');
    expect(named.guides.map((g) => g.id)).toEqual(['careful']);
    expect(named.guides[0]!.interpretPain(eperm, ctx)).toBe('CAREFUL: EPERM');
    const tail = { id: 'tail', description: 'the newest turn', plan: () => ({ start: 2 }) };
    const byDefault = pluginOf({ default: { guides: [defineGuide(spec)], contextStrategies: [tail] } }, 'm');
    expect(byDefault.guides.map((g) => g.id)).toEqual(['careful']);
    expect(byDefault.contextStrategies).toEqual([tail]);
  });

  it('checks a guide not made with defineGuide as defineGuide does, naming the module and the entry', () => {
    const { description: _, ...bare } = spec;
    expect(pluginOf({ guides: [bare] }, 'm').guides[0]!.description).toBe('');
    const err = thrown(() => pluginOf({ guides: [defineGuide(spec), { ...spec, id: 'Bad' }] }, '"./my-plugin.js"'));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(
      'plugin module "./my-plugin.js": guides[1]: defineGuide: id "Bad" is not a guide id: use a lowercase letter, then up to 63 lowercase letters, digits, "_" or "-"',
    );
  });

  it.each([
    ['nothing', {}],
    ['empty lists', { guides: [], contextStrategies: [] }],
    ['a function', () => undefined],
    ['undefined', undefined],
    ['an unrelated default export', { default: { hello: 'world' } }],
  ])('giving %s is refused, saying what a plugin module exports', (_what, exports) => {
    expect(() => pluginOf(exports, '"m"')).toThrow(
      'plugin module "m" exports no guides and no context strategies: export `guides` (made with defineGuide) and/or `contextStrategies`, or a default export { guides, contextStrategies }',
    );
  });

  it('refuses lists that are not arrays, strategies without an id, and a strategy given twice', () => {
    expect(() => pluginOf({ guides: defineGuide(spec) }, '"m"')).toThrow(
      'plugin module "m": `guides` must be an array',
    );
    expect(() => pluginOf({ contextStrategies: [{ name: 'x' }] }, '"m"')).toThrow(
      'plugin module "m": contextStrategies[0] has no valid id',
    );
    expect(() => pluginOf({ contextStrategies: [{ id: 'a' }] }, '"m"')).toThrow(
      'plugin module "m": context strategy "a" needs plan(view) as a function',
    );
    const a = { id: 'a', description: '', plan: () => ({ start: 2 }) };
    expect(() => pluginOf({ contextStrategies: [a, a] }, '"m"')).toThrow(
      'plugin module "m" gives context strategy "a" twice',
    );
  });
});

describe('the guide and strategy a task names, at submit', () => {
  const offer = { guides: [...guideIds(), 'careful'], contextStrategies: ['window', 'prefix'] };

  it('pass when the worker has them, or when the task names none', () => {
    expect(refusedChoices(offer, { guide: 'careful', contextStrategy: 'prefix' })).toBeUndefined();
    expect(refusedChoices(offer, {})).toBeUndefined();
  });

  it('are refused when the worker lacks them, listing what it has and how a worker adds more', () => {
    expect(refusedChoices(offer, { guide: 'zen', contextStrategy: 'lossy' })).toBe(
      'guide "zen" is not on this worker: it has pain, safety, learning, debugging, neutral, careful; ' +
        'context strategy "lossy" is not on this worker: it has window, prefix. ' +
        'A worker adds guides and context strategies with plugin modules (STARRY_PLUGINS, createWorker({ plugins })).',
    );
  });

  it('leave the strategy unchecked on a worker that does not list its strategies', () => {
    expect(refusedChoices({ guides: ['pain'] }, { guide: 'pain', contextStrategy: 'anything' })).toBeUndefined();
  });
});
