import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../core/errors';
import { thrown } from '../core/guides/test-support';
import { workerConfigFromEnv } from './env';
import { loadPlugins, pluginList, pluginWorkflowsEntry, workerOffer } from './plugins';

const fixtures = path.resolve(__dirname, '..', 'test', 'fixtures', 'plugins');
const fixture = (name: string) => path.join(fixtures, name);

describe("a worker's plugin modules, loaded at its start", () => {
  it('offer the shipped guides and then the plugins’ own, with their context strategies', () => {
    const loaded = loadPlugins([fixture('plain.js')]);
    expect(loaded.guides).toEqual(['pain', 'safety', 'learning', 'debugging', 'neutral', 'plain']);
    expect(loaded.contextStrategies).toEqual(['plain-window']);
    // At submit the worker offers the built-in strategies and the plugins' own.
    expect(workerOffer(loaded).contextStrategies).toEqual(['prefix', 'window', 'summarize', 'plain-window']);
    expect(loaded.modules).toEqual([{ spec: fixture('plain.js'), file: fixture('plain.js') }]);
  });

  it('are found relative to the working directory', () => {
    expect(loadPlugins(['./plain.js'], fixtures).modules[0]!.file).toBe(fixture('plain.js'));
  });

  it('refuse to start with a module that is missing, naming it', () => {
    const err = thrown(() => loadPlugins(['./no-such-plugin.js'], fixtures));
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toBe(
      `plugin module "./no-such-plugin.js" cannot be found (from ${fixtures}): give an absolute path, a path relative to the working directory, or the name of an installed module`,
    );
  });

  it('refuse a module that exports nothing usable', () => {
    expect(() => loadPlugins([fixture('empty.js')])).toThrow(
      `plugin module "${fixture('empty.js')}" exports no guides and no context strategies`,
    );
  });

  it('refuse a guide that reuses a shipped guide’s id', () => {
    expect(() => loadPlugins(['./reuses-pain.js'], fixtures)).toThrow(
      'guide id "pain" (from plugin module "./reuses-pain.js") is already taken by a built-in guide',
    );
  });

  it('refuse the same module given twice', () => {
    expect(() => loadPlugins(['./plain.js', fixture('plain.js')], fixtures)).toThrow(
      `plugin module "${fixture('plain.js')}" is given twice`,
    );
  });

  it('are registered by a generated workflow entry that exports the package’s workflows, the same file for the same plugins', () => {
    const loaded = loadPlugins([fixture('plain.js')]);
    const entry = pluginWorkflowsEntry(loaded);
    expect(pluginWorkflowsEntry(loadPlugins([fixture('plain.js')]))).toBe(entry);
    const code = readFileSync(entry, 'utf8');
    expect(code).toContain(`registerPlugin(require(${JSON.stringify(fixture('plain.js'))})`);
    expect(code).toContain(`module.exports = require(${JSON.stringify(require.resolve('../workflows'))});`);
  });
});

describe('STARRY_PLUGINS', () => {
  it('is a list separated by commas or colons', () => {
    expect(pluginList(' /srv/a.js, careful-guides:/srv/b.mjs,, ')).toEqual([
      '/srv/a.js',
      'careful-guides',
      '/srv/b.mjs',
    ]);
    expect(workerConfigFromEnv({ STARRY_PLUGINS: '/srv/a.js,b' }).plugins).toEqual(['/srv/a.js', 'b']);
    expect(workerConfigFromEnv({}).plugins).toBeUndefined();
  });

  it('cannot go with a prebuilt bundle, which cannot hold the plugins', () => {
    expect(() =>
      workerConfigFromEnv({ STARRY_PLUGINS: '/srv/a.js', STARRY_WORKFLOW_BUNDLE: '/srv/bundle.js' }),
    ).toThrow(/STARRY_PLUGINS and STARRY_WORKFLOW_BUNDLE are both set/);
  });
});
