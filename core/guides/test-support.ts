/**
 * The failure the guide tests interpret: a model's `fs.read` of a file outside its one root, refused;
 * and a guide of a worker's own, `careful`, for the registry and plugin tests.
 */
import { normalizedError } from '../errors';
import type { GuideSpec } from './define';
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

/** A worker's own guide, as a plugin module gives it to `defineGuide`. */
export const carefulSpec: GuideSpec = {
  id: 'careful',
  description: 'Facts, then a reminder to check.',
  systemPrompt: () => 'Be careful.',
  interpretPain: (error) => `CAREFUL: ${error.code}`,
  interpretAlert: (alert) => `CAREFUL ALERT: ${alert.kind}`,
};

/** The error `f` throws (a test that expected none fails). */
export function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}
