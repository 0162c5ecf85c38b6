/**
 * A tool worker beside `starry dev`'s embedded one, when tools have a task queue of their own
 * (`STARRY_TOOL_TASK_QUEUE`): a child process (`starry worker --tools`) started without the LLM keys, so
 * tool code on this machine runs where no LLM key is, as on a deployment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { isSecretName } from '../core/child-env';
import { LLM_KEY_VARS } from '../workers/env';
import { projectRoot } from './paths';

/** A tool worker process: its pid, and `stop` (SIGTERM, then waits for it to drain). */
export interface ToolWorkerProcess {
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The environment a tool worker starts with: this one without the LLM keys, the API's secrets and the
 * cloud credentials its tools do not use (AWS's unless its transcript store is a bucket; Google's
 * always), plus `extra`. It keeps the Temporal credentials (it polls), the store's, the `OTEL_*` and
 * the variables its policy hands MCP servers (`mcpEnv`).
 */
export function toolWorkerEnv(
  env: NodeJS.ProcessEnv = process.env,
  extra: Record<string, string> = {},
): Record<string, string> {
  const out: Record<string, string> = {};
  const all = { ...env, ...extra };
  const keys: readonly string[] = LLM_KEY_VARS;
  const bucket = Boolean(all.STARRY_STORE_BUCKET?.trim());
  const dropped = (name: string) =>
    keys.includes(name) ||
    name.startsWith('STARRY_API_') ||
    name.startsWith('GOOGLE_') ||
    (!bucket && name.startsWith('AWS_') && isSecretName(name));
  for (const [name, value] of Object.entries(all)) if (value !== undefined && !dropped(name)) out[name] = value;
  return out;
}

/**
 * Start `node lib/workers/main.js --tools` without the LLM keys; resolves once it says it is ready, and
 * rejects with what it printed when it exits first. Its output goes to `output` (default: this stderr).
 *
 * ```ts
 * const tools = await startToolWorkerProcess({ TEMPORAL_ADDRESS: '127.0.0.1:7233' });
 * await tools.stop();
 * ```
 */
export function startToolWorkerProcess(
  extra: Record<string, string> = {},
  output: (chunk: string) => void = (chunk) => void process.stderr.write(chunk),
): Promise<ToolWorkerProcess> {
  // The compiled entry point, whether this runs compiled or from the sources (tests).
  const main = path.join(projectRoot(), 'lib', 'workers', 'main.js');
  const child = spawn(process.execPath, [main, '--tools'], {
    env: toolWorkerEnv(process.env, extra),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let said = '';
    const read = (d: Buffer) => {
      const chunk = String(d);
      output(chunk);
      said += chunk;
      if (said.includes('tool worker ready')) resolve({ child, stop });
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('exit', (code) => reject(new Error(`the tool worker exited (${code}): ${said.trim()}`)));
  });
}
