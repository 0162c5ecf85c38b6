/**
 * The worker's policy (core/worker-policy.ts) read from the worker's own environment, never from a task:
 *
 * - `STARRY_WORKER_POLICY`: a JSON policy, inline (`{"roots": [...]}`) or the path of a JSON file.
 * - otherwise the default: roots `STARRY_WORKSPACE_ROOTS` (`:`-separated) or the worker's working
 *   directory and the project folder (so the README's quick start and `starry demo` work), the default
 *   shell allow-list, no HTTP host, a 1 MiB output cap.
 * - `STARRY_TOOLS_ALLOW_ROOT=1`: tools may run as root when the worker does (default: `shell.run` drops
 *   to `nobody`). Overrides the policy's `allowRoot`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseWorkerPolicy, type WorkerPolicy } from '../core/worker-policy';
import { ConfigError } from '../core/request-errors';
import { projectRoot } from './paths';

/**
 * The policy from `env`.
 *
 * ```ts
 * const policy = workerPolicyFromEnv(); // { roots: [cwd, project], shellAllow: [...], ... }
 * ```
 * @throws ConfigError when the variables hold an invalid policy.
 */
export function workerPolicyFromEnv(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): WorkerPolicy {
  const raw = env.STARRY_WORKER_POLICY?.trim();
  let policy: unknown;
  if (raw) {
    const origin = raw.startsWith('{') ? 'STARRY_WORKER_POLICY' : `STARRY_WORKER_POLICY file ${raw}`;
    try {
      policy = JSON.parse(raw.startsWith('{') ? raw : readFileSync(raw, 'utf8'));
    } catch (err) {
      throw new ConfigError(`Cannot read ${origin}: ${(err as Error).message}. Give a JSON object or the path of a JSON file.`);
    }
  } else {
    const roots = env.STARRY_WORKSPACE_ROOTS?.split(':').filter(Boolean).map((r) => path.resolve(cwd, r));
    policy = { roots: roots?.length ? roots : [...new Set([path.resolve(cwd), projectRoot()])] };
  }
  const parsed = parseWorkerPolicy(policy, raw ? 'STARRY_WORKER_POLICY' : 'worker policy');
  if (env.STARRY_TOOLS_ALLOW_ROOT !== undefined) return { ...parsed, allowRoot: env.STARRY_TOOLS_ALLOW_ROOT === '1' };
  return parsed;
}
