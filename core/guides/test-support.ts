/**
 * The failure the guide tests interpret: a model's `fs.read` of a file outside its one root, refused.
 */
import { normalizedError } from '../errors';
import type { PainContext } from './guide';

export const ctx: PainContext = {
  tick: 1,
  toolName: 'fs.read',
  args: { path: '/root/secret.txt' },
  consecutiveFailures: 1,
  workspace: ['/w'],
};

export const eperm = normalizedError({
  code: 'EPERM',
  message: 'Permission Denied',
  source: 'fs.read',
  suggestion: 'Permitted roots: /w',
});
