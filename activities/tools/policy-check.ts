/**
 * The worker's policy applied to one tool call: the task's workspace roots and tool settings must lie
 * within the operator's limits (core/worker-policy.ts). A wider config is a fatal error the user sees
 * (the task fails ERROR_PAUSED with the refusal), never pain the model could argue with.
 */
import { promises as fs } from 'node:fs';
import { isRequestError } from '../../core/errors';
import {
  isWithin,
  narrowToPolicy,
  widerThanPolicy,
  type TaskLimits,
  type WorkerPolicy,
} from '../../core/worker-policy';
import type { Workspace } from './sandbox';
import { ToolError } from '../../core/errors/activity';

/**
 * Refuse a call whose limits are wider than `policy`. Roots are compared lexically, then by realpath,
 * so a root that is a symlink out of the allowed tree is refused too. A tool call passes its
 * `workspace`: the realpaths checked here are those its tool then confines paths to.
 *
 * @throws ToolError E_INTERNAL fatal naming each wider field.
 */
export async function checkPolicy(
  policy: WorkerPolicy,
  task: TaskLimits,
  source: string,
  workspace?: Workspace,
): Promise<void> {
  const refuse = (message: string) =>
    ToolError.of({ code: 'E_INTERNAL', kind: 'fatal', source, message: `Refused by the worker's policy: ${message}` });
  try {
    narrowToPolicy(policy, task);
  } catch (err) {
    if (isRequestError(err)) throw refuse(err.message);
    throw err;
  }
  // A missing root is reported by the tool itself.
  const realpath = (p: string) => (workspace ? workspace.realpath(p) : fs.realpath(p)).catch(() => p);
  const [allowed, reals] = await Promise.all([
    Promise.all(policy.roots.map((r) => fs.realpath(r).catch(() => r))),
    Promise.all(task.workspace.map(realpath)),
  ]);
  for (const [i, root] of task.workspace.entries()) {
    const real = reals[i] as string;
    if (!allowed.some((a) => isWithin(real, a))) {
      throw refuse(
        widerThanPolicy([
          `workspace: '${root}' resolves to ${real}, outside every root the worker allows (${policy.roots.join(', ')})`,
        ]),
      );
    }
  }
}
