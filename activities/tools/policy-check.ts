/**
 * The worker's policy applied to one tool call: the task's workspace roots and tool settings must lie
 * within the operator's limits (core/worker-policy.ts). A wider config is a fatal error the user sees
 * (the task fails ERROR_PAUSED with the refusal), never pain the model could argue with.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isRequestError } from '../../core/errors';
import { tenantRoots } from '../../core/tenant';
import {
  isWithin,
  narrowToPolicy,
  widerThanPolicy,
  type TaskLimits,
  type WorkerPolicy,
} from '../../core/worker-policy';
import type { Workspace } from './sandbox';
import { ToolError } from '../../core/errors/activity';
import { activityTenant } from '../tenant';

/**
 * Refuse a call whose limits are wider than `policy`. Roots are compared lexically, then by realpath,
 * so a root that is a symlink out of the allowed tree is refused too. A tool call passes its
 * `workspace`: the realpaths checked here are those its tool then confines paths to. A call (not the
 * submit check) first creates a workspace root that does not exist yet inside a root the policy allows.
 * A tenant's task (`tenant`, by default the one whose task the activity runs) may use only the tenant's
 * part of the roots, `<root>/<tenant>`, made by its first call.
 *
 * @throws ToolError E_INTERNAL fatal naming each wider field.
 */
export async function checkPolicy(
  policy: WorkerPolicy,
  task: TaskLimits,
  source: string,
  workspace?: Workspace,
  tenant: string | undefined = activityTenant(),
): Promise<void> {
  const refuse = (message: string) =>
    ToolError.of({ code: 'E_INTERNAL', kind: 'fatal', source, message: `Refused by the worker's policy: ${message}` });
  try {
    narrowToPolicy(policy, task, tenant);
  } catch (err) {
    if (isRequestError(err)) throw refuse(err.message);
    throw err;
  }
  // Looked up while the workspace's roots are looked at: each file system call is a round trip through
  // libuv's thread pool, and a call's roots exist but the first time. A tenant's part is below the real
  // root, so a symlink named like a tenant leads nowhere else.
  const resolving = Promise.all(policy.roots.map((r) => fs.realpath(r).catch(() => r))).then((real) =>
    tenantRoots(real, tenant),
  );
  if (workspace && tenant !== undefined) await makeTenantRoots(await resolving);
  if (workspace) await Promise.all(task.workspace.map((root) => createIfMissing(root, resolving)));
  // A missing root (one outside the policy's, or not creatable) is reported by the tool itself.
  const realpath = (p: string) => (workspace ? workspace.realpath(p) : fs.realpath(p)).catch(() => p);
  const [allowed, reals] = await Promise.all([resolving, Promise.all(task.workspace.map(realpath))]);
  for (const [i, root] of task.workspace.entries()) {
    const real = reals[i] as string;
    if (!allowed.some((a) => isWithin(real, a))) {
      throw refuse(
        widerThanPolicy([
          `workspace: '${root}' resolves to ${real}, outside ${tenant === undefined ? 'every root the worker allows' : `tenant ${tenant}'s part of the roots the worker allows`} (${allowed.join(', ')})`,
        ]),
      );
    }
  }
}

/**
 * A tenant's part of each root (`<real root>/<tenant>`), made when missing (as the worker's user, like
 * a workspace): a directory, not a symlink, since it is made here and compared by realpath after.
 */
async function makeTenantRoots(parts: string[]): Promise<void> {
  await Promise.all(parts.map((dir) => fs.mkdir(dir).catch(() => undefined)));
}

/**
 * Create the workspace root `root` (with its missing parents, as `mkdir -p`) when it does not exist and
 * the realpath of its nearest existing ancestor lies within a root the policy allows (`allowedRoots`, realpaths):
 * a symlink out of the tree makes nothing. What was made is checked by realpath after, like any root.
 */
async function createIfMissing(root: string, allowedRoots: Promise<string[]>): Promise<void> {
  if (!path.isAbsolute(root)) return;
  let above = path.dirname(root);
  try {
    await fs.lstat(root);
    return;
  } catch {
    // Missing (or unreadable: then mkdir says why below, or the tool does).
  }
  for (;;) {
    try {
      const real = await fs.realpath(above);
      const allowed = await allowedRoots;
      if (allowed.some((a) => isWithin(real, a))) await fs.mkdir(root, { recursive: true }).catch(() => undefined);
      return;
    } catch {
      if (above === path.dirname(above)) return;
      above = path.dirname(above);
    }
  }
}
