/**
 * Test support for the tool tests: real temporary directories (a workspace and a sibling "outside"),
 * and tool contexts built from the real config schema. Not part of the runtime.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { toolsConfigSchema, type AgentConfig } from '../../core/config';
import { parseWorkerPolicy, type WorkerPolicy, type WorkerPolicyInput } from '../../core/worker-policy';

/** A fresh temp directory holding `ws/` (the workspace root) and `outside/` (beside it, not permitted). */
export interface TempWorkspace {
  base: string;
  root: string;
  outside: string;
  cleanup(): Promise<void>;
}

/** Create a TempWorkspace under os.tmpdir(). */
export async function makeWorkspace(): Promise<TempWorkspace> {
  // realpath: on macOS os.tmpdir() is itself behind a symlink.
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'starry-tools-')));
  const root = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await fs.mkdir(root);
  await fs.mkdir(outside);
  return { base, root, outside, cleanup: () => fs.rm(base, { recursive: true, force: true }) };
}

/** The tools config with defaults, plus overrides. */
export function toolsConfig(overrides: Partial<AgentConfig['tools']> = {}): AgentConfig['tools'] {
  return toolsConfigSchema().parse(overrides);
}

/** A worker policy granting `ws.base` (root and outside both lie below it: the tools' own checks are tested). */
export function testPolicy(ws: TempWorkspace, overrides: Partial<WorkerPolicyInput> = {}): WorkerPolicy {
  return parseWorkerPolicy({
    roots: [ws.base],
    allowRoot: true,
    journalDir: path.join(ws.base, 'journal'),
    ...overrides,
  });
}
