#!/usr/bin/env node
// Every link from README.md and docs/*.md to a section of a Markdown file names a heading that file has:
// a section renamed or folded into another (docs/BENCHMARKS.md's are rewritten as figures change) must
// take its links along. Run by `npm run lint` (so by CI); prints each dangling link and exits 1.
//
//   node scripts/check-doc-links.mjs [file.md ...]   (default: README.md and docs/*.md)
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const files = process.argv.slice(2).length
  ? process.argv.slice(2).map((f) => path.resolve(f))
  : [
      path.join(root, 'README.md'),
      ...readdirSync(path.join(root, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => path.join(root, 'docs', f)),
    ];

/** The file's lines, those in fenced code blocks blanked (a `# comment` in a shell block is no heading). */
function prose(file) {
  let fenced = false;
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => {
      const fence = /^\s*(```|~~~)/.test(line);
      if (fence) fenced = !fenced;
      return fence || fenced ? '' : line;
    });
}

/** GitHub's anchors: the heading lowercased, punctuation dropped, spaces as '-', repeats numbered. */
function anchors(file) {
  const seen = new Map();
  const out = new Set();
  for (const line of prose(file)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

const cache = new Map();
const bad = [];
for (const file of files) {
  prose(file).forEach((line, i) => {
    for (const [, target, anchor] of line.matchAll(/\]\(([^)\s#]*\.md)?#([^)\s]+)\)/g)) {
      const to = target ? path.resolve(path.dirname(file), target) : file;
      const where = `${path.relative(root, file)}:${i + 1}`;
      if (!existsSync(to)) bad.push(`${where}: ${target} does not exist`);
      else {
        if (!cache.has(to)) cache.set(to, anchors(to));
        if (!cache.get(to).has(anchor)) bad.push(`${where}: ${path.relative(root, to)} has no heading for #${anchor}`);
      }
    }
  });
}
for (const b of bad) console.error(b);
process.exit(bad.length ? 1 : 0);
