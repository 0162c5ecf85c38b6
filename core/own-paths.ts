/**
 * The worker never runs what a task can write (docs/ARCHITECTURE.md, "Trust boundary"). Tasks write
 * anywhere under the worker's roots, so no root may contain, or lie inside, anything the worker loads,
 * runs or keeps: its code and packages, its tools, the content store, the call journal, its policy and
 * plugin files, its credentials. Otherwise one `fs.write` turns into code the worker runs outside the
 * sandbox with every key it holds (a task rewrote the local model host, which the next `local:` task
 * forked). Pure: the worker collects its own paths at start (workers/own-paths.ts) and refuses to start
 * on an overlap, naming it.
 */
import { isWithin } from './worker-policy';

/** Something of the worker's own, by its real path. */
export interface OwnPath {
  path: string;
  /** What it is, for the refusal: `the worker's code and packages`, `the transcript store`, … */
  what: string;
  /**
   * A folder inside `path` where roots may lie: the package's own `workspaces/`, the default root, which
   * holds nothing the worker loads.
   */
  rootsMayLieIn?: string;
}

/** A root that overlaps something of the worker's: it contains it, or lies inside it. */
export interface RootConflict {
  root: string;
  own: OwnPath;
  how: 'contains' | 'lies inside';
}

/**
 * Every overlap between the roots and the worker's own paths (all real, normalized absolute paths).
 *
 * ```ts
 * rootConflicts(['/srv'], [{ path: '/srv/app', what: "the worker's code and packages" }])
 * // [{ root: '/srv', own: { path: '/srv/app', … }, how: 'contains' }]
 * rootConflicts(['/srv/app/workspaces'], [{ path: '/srv/app', what: '…', rootsMayLieIn: '/srv/app/workspaces' }]) // []
 * ```
 */
export function rootConflicts(roots: readonly string[], own: readonly OwnPath[]): RootConflict[] {
  const conflicts: RootConflict[] = [];
  for (const root of roots) {
    for (const o of own) {
      if (isWithin(o.path, root)) conflicts.push({ root, own: o, how: 'contains' });
      else if (isWithin(root, o.path) && !(o.rootsMayLieIn !== undefined && isWithin(root, o.rootsMayLieIn)))
        conflicts.push({ root, own: o, how: 'lies inside' });
    }
  }
  return conflicts;
}

/** Where a worker's roots were set, for the refusal: a setting, the default, or the code that created the worker. */
export type RootsOrigin =
  'STARRY_WORKER_POLICY' | 'STARRY_WORKSPACE_ROOTS' | 'the default' | 'the policy given in code';

/**
 * Why a worker refuses to start on roots that overlap its own paths, or undefined when none does: each
 * overlap on a line, then why it matters and what to do.
 *
 * ```ts
 * ownPathsRefusal(conflicts, 'STARRY_WORKSPACE_ROOTS')
 * // "this worker's workspace roots (STARRY_WORKSPACE_ROOTS) overlap what the worker itself loads, runs or keeps: …"
 * ```
 */
export function ownPathsRefusal(conflicts: readonly RootConflict[], from: RootsOrigin): string | undefined {
  if (!conflicts.length) return undefined;
  const setting = from === 'STARRY_WORKER_POLICY' ? 'the roots of STARRY_WORKER_POLICY' : 'STARRY_WORKSPACE_ROOTS';
  return (
    `this worker's workspace roots (${from}) overlap what the worker itself loads, runs or keeps, so a task could ` +
    'write code the worker then runs outside the sandbox, or read its secrets and transcripts:\n' +
    conflicts.map((c) => `  - ${c.root} ${c.how} ${c.own.what} (${c.own.path})`).join('\n') +
    `\nGive tasks a folder that holds none of these (e.g. mkdir -p /srv/workspaces and set ${setting} to /srv/workspaces), ` +
    'or move the store, the journal or the file out of the roots; then start the worker again.'
  );
}
