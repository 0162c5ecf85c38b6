import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * Every new workflow evaluates the bundle's modules afresh, so each workflow type must load only its
 * own (workflows/index.ts, docs/BENCHMARKS.md): the modules a workflow evaluates are its entry's value
 * imports, followed. A type-only import is erased by the compiler and costs nothing.
 */
const root = path.resolve(__dirname, '..');

/**
 * Our files `entry` evaluates at run time (relative to the repository), found by compiling each one as the build does.
 */
function evaluatedModules(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of requiresOf(file).filter((s) => s.startsWith('.'))) {
      const base = path.join(path.dirname(file), spec as string);
      visit(
        [`${base}.ts`, path.join(base, 'index.ts')].find((f) => ts.sys.fileExists(path.join(root, f))) ?? `${base}.ts`,
      );
    }
  };
  visit(entry);
  return seen;
}

/** What a file `require`s at run time, compiled as the build does. */
function requiresOf(file: string): string[] {
  const js = ts.transpileModule(readFileSync(path.join(root, file), 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  }).outputText;
  return [...js.matchAll(/require\("([^"]+)"\)/g)].map(([, spec]) => spec as string);
}

describe('the modules each workflow evaluates', () => {
  it('an agent evaluates none of its task’s tick loop (it starts tasks by their type’s name)', () => {
    const agent = evaluatedModules('workflows/agent.ts');
    expect(agent).toContain('core/agent-entity.ts');
    expect(agent).not.toContain('workflows/task.ts');
    expect(agent).not.toContain('core/task-run.ts');
  });

  it('a task evaluates none of the agent entity, nor the config schema', () => {
    const task = evaluatedModules('workflows/task.ts');
    expect(task).toContain('core/task-run.ts');
    expect(task).not.toContain('workflows/agent.ts');
    expect(task).not.toContain('core/agent-entity.ts');
    expect(task).not.toContain('core/config.ts');
  });

  it('a workflow evaluates the error taxonomy and the request errors, never the HTTP table nor the errors activities throw', () => {
    for (const entry of ['workflows/agent.ts', 'workflows/task.ts']) {
      const modules = evaluatedModules(entry);
      expect([...modules]).toEqual(expect.arrayContaining(['core/errors/index.ts', 'core/errors/request.ts']));
      expect(modules).not.toContain('core/errors/http.ts');
      expect(modules).not.toContain('core/errors/activity.ts');
    }
  });
});

/**
 * Where a module builds a zod schema while it is evaluated: a `z.…(…)` call outside any function
 * (`const s = z.object(…)` at the top level), as `file:line`.
 */
function schemasBuiltAtEvaluation(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(path.join(root, file), 'utf8'), ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node)) return; // built when called, not when evaluated
    if (
      ts.isCallExpression(node) &&
      /^z\.\w+$/.test(node.expression.getText(source).split('(')[0]!.split('.').slice(0, 2).join('.'))
    ) {
      found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`);
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the zod schemas on the workflow path', () => {
  it('are built on first use, not while a new task workflow evaluates its modules', () => {
    expect([...evaluatedModules('workflows/task.ts')].flatMap(schemasBuiltAtEvaluation)).toEqual([]);
  });

  it('are built on first use by an agent too, but for the worker policy’s, which it evaluates for the default shell list', () => {
    const built = [...evaluatedModules('workflows/agent.ts')].flatMap(schemasBuiltAtEvaluation);
    expect(built.filter((at) => !at.startsWith('core/worker-policy.ts:'))).toEqual([]);
  });
});

describe('openstarry-temporal/plugins, which plugin modules import into the workflow sandbox', () => {
  it('evaluates only pure code of core/: no client, worker, activity, Node module nor Temporal package', () => {
    const modules = [...evaluatedModules('plugins.ts')];
    expect(modules).toEqual(expect.arrayContaining(['core/guides/index.ts', 'core/guides/define.ts']));
    expect(modules.filter((m) => m !== 'plugins.ts' && !m.startsWith('core/'))).toEqual([]);
    const packages = new Set(modules.flatMap((m) => requiresOf(m).filter((s) => !s.startsWith('.'))));
    // zod and the hashes are the libraries the workflows already preload (workflows/preload.ts).
    expect([...packages].filter((p) => !['zod', '@noble/hashes/sha2', '@noble/hashes/utils'].includes(p))).toEqual([]);
  });

  it('is what the package exports as ./plugins, beside the root entry', () => {
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    expect(pkg.exports['./plugins']).toEqual({ types: './lib/plugins.d.ts', default: './lib/plugins.js' });
  });
});
