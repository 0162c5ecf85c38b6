/**
 * The worker's roots at start: a worker that runs tool calls refuses to start on a root it cannot use,
 * saying which and what to do.
 */

/** Where a worker's roots were set: the policy's `roots`, `STARRY_WORKSPACE_ROOTS`, or (absent) the defaults. */
export type RootsSource = 'STARRY_WORKER_POLICY' | 'STARRY_WORKSPACE_ROOTS';

/** One root a worker cannot use, and why: `does not exist`, `is not a directory`, `is not writable …`. */
export interface RootProblem {
  root: string;
  problem: string;
}

/**
 * Whether a worker checks its roots at start: it does when it runs tool calls itself, i.e. it is a tool
 * worker (`starry worker --tools`) or its tools have no task queue of their own. A workflow worker whose
 * tools run on tool workers uses no root.
 *
 * ```ts
 * runsToolCalls({ tools: false, toolTaskQueue: 'openstarry-tools' }) // false
 * runsToolCalls({ tools: true, toolTaskQueue: 'openstarry-tools' })  // true
 * ```
 */
export function runsToolCalls({ tools, toolTaskQueue }: { tools: boolean; toolTaskQueue?: string }): boolean {
  return tools || !toolTaskQueue;
}

/**
 * Why a worker that runs tool calls refuses to start, or undefined when every root is usable: each root
 * it cannot use on a line, then what to do (mount or create it, let the worker's user write it, or point
 * the setting the roots came from elsewhere).
 *
 * ```ts
 * unusableRootsRefusal([{ root: '/workspaces', problem: 'does not exist' }], 'STARRY_WORKSPACE_ROOTS')
 * // "this worker runs tool calls, but a workspace root it allows (STARRY_WORKSPACE_ROOTS) cannot be used: …"
 * ```
 */
export function unusableRootsRefusal(problems: RootProblem[], from: RootsSource): string | undefined {
  if (!problems.length) return undefined;
  const setting = from === 'STARRY_WORKER_POLICY' ? 'the roots of STARRY_WORKER_POLICY' : 'STARRY_WORKSPACE_ROOTS';
  const first = problems[0]!.root;
  return (
    `this worker runs tool calls, but ${problems.length > 1 ? 'workspace roots' : 'a workspace root'} it allows (${from}) cannot be used:\n` +
    problems.map((p) => `  - ${p.root}: ${p.problem}`).join('\n') +
    `\nMount the workspaces' file system there (on AWS, the stack's EFS at /workspaces) or create the directory (mkdir -p ${first}), ` +
    `let the worker's user write it, or set ${setting} to directories it can write; then start the worker again.`
  );
}
