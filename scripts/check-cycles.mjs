#!/usr/bin/env node
// A core without knots (docs/ARCHITECTURE.md, "Where each rule lives"): no import cycle among the files
// of core/, type imports included. ESLint's import-x/no-cycle skips `import type`, which has no runtime
// effect but ties the modules' meaning together all the same: a reader cannot take one in without the
// others. Run by `npm run lint` (so by CI); prints each cycle and exits 1.
//
//   node scripts/check-cycles.mjs [dir ...]   (default: core)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const dirs = process.argv.slice(2).length ? process.argv.slice(2) : ['core'];

/** Every source file (no tests) below `dir`. */
function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sources(file);
    return file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('.d.ts') ? [file] : [];
  });
}

/** The files of `scope` that `file` imports or re-exports, types included. */
function importsOf(file, scope) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => {
      const base = path.resolve(path.dirname(file), spec);
      return [`${base}.ts`, path.join(base, 'index.ts')].find((candidate) => scope.has(candidate));
    })
    .filter((dep) => dep !== undefined);
}

/** Strongly connected components of more than one file (or a file importing itself): Tarjan's. */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const meta = new Map();
  const found = [];
  const visit = (v) => {
    meta.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v)) {
      if (!meta.has(w)) {
        visit(w);
        meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).low);
      } else if (meta.get(w).onStack) meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).index);
    }
    if (meta.get(v).low === meta.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        meta.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!meta.has(v)) visit(v);
  return found;
}

const files = dirs.flatMap((d) => sources(path.join(root, d)));
const scope = new Set(files);
const graph = new Map(files.map((f) => [f, importsOf(f, scope)]));
const knots = cycles(graph);
const shown = (f) => path.relative(root, f);
if (knots.length) {
  console.error(
    `import cycles in ${dirs.join(', ')} (type imports included): move what both sides need into a module of its own`,
  );
  for (const knot of knots) {
    console.error(`  - ${knot.map(shown).join(' <-> ')}`);
    for (const f of knot) {
      const inKnot = graph.get(f).filter((d) => knot.includes(d));
      console.error(`      ${shown(f)} imports ${inKnot.map(shown).join(', ')}`);
    }
  }
  process.exit(1);
}
console.log(`no import cycle in ${dirs.join(', ')} (${files.length} files, type imports included)`);
