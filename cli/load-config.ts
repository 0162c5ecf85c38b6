/**
 * Agent config from the command line: `--config FILE` plus flag overrides, validated once here (the
 * edge) with messages that say what is wrong and how to fix it. Paths become absolute, because the
 * worker may run in another directory.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { temporalEnv } from '../client/connection';
import { ConfigError, parseTaskConfig, type TaskConfig } from '../core/config';
import { parseJsonText, parseScript } from '../core/script';

export interface ConfigFlags {
  config?: string;
  llm?: string;
  workspace?: string[];
  guide?: string;
}

/**
 * Build the agent config for a task; of `safety` it keeps the limits the file gives (the others are the
 * agent's, core/limits.ts).
 * @throws ConfigError (the CLI prints it and exits 64).
 */
export function loadAgentConfig(
  flags: ConfigFlags,
  cwd = process.cwd(),
  temporalAddress = temporalEnv().address,
): TaskConfig {
  let raw: Record<string, unknown> = {};
  let base = cwd;
  if (flags.config) {
    const file = path.resolve(cwd, flags.config);
    if (!existsSync(file)) throw new ConfigError(`config file ${file} does not exist`);
    raw = parseJsonText(readFileSync(file, 'utf8'), `config file ${file}`) as Record<string, unknown>;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new ConfigError(`config file ${file} must hold a JSON object`);
    // Relative paths in a config file are relative to the file, as users expect.
    base = path.dirname(file);
  }
  const merged = { ...raw };
  if (flags.guide) merged.guide = flags.guide;
  if (flags.workspace?.length) merged.workspace = flags.workspace;
  const origin = flags.config ? `config ${flags.config}` : 'agent config';
  // The guide's id is checked here; whether the worker has it, at submit (its plugins may add guides).
  const config = parseTaskConfig(merged, flags.llm, origin);
  const spec = config.llm;
  let llm = spec;
  if (spec.provider === 'scripted') {
    const file = path.resolve(flags.llm ? cwd : base, spec.file);
    if (!existsSync(file)) throw new ConfigError(`scripted controller file ${file} does not exist`);
    // Checked here, before any workflow starts, so a bad script is a usage error, not a failed task.
    const st = statSync(file);
    if (!st.isFile()) throw new ConfigError(`scripted controller file ${file} is not a regular file`);
    if (st.size > 10 * 1024 * 1024)
      throw new ConfigError(`scripted controller file ${file} is ${st.size} bytes; a script may be at most 10 MiB`);
    parseScript(readFileSync(file, 'utf8'), file);
    llm = { ...spec, file };
  } else if (spec.provider === 'local') {
    const file = path.resolve(flags.llm ? cwd : base, spec.modelPath);
    if (!existsSync(file))
      throw new ConfigError(
        `local model ${file} does not exist. Fetch the default one (SmolLM2-135M) with \`npm run setup\`, or give the path of another GGUF file.`,
      );
    llm = { ...spec, modelPath: file };
  }
  const workspace = workspacePaths(config.workspace, flags.workspace?.length ? cwd : base, temporalAddress);
  return { ...config, llm, workspace };
}

/**
 * A task's workspaces as the worker will see them. With Temporal on this machine (the embedded default,
 * `starry dev`), the worker that runs the tool calls is this machine's too: a path is relative to where it
 * was written and must be a directory here, so a typo is caught before anything starts. With Temporal
 * elsewhere, the paths are the tool workers' (e.g. `/workspaces/a1` on the AWS stack's EFS): they must be
 * absolute, and the worker checks them at submit (inside its roots) and makes a missing one at the first call.
 */
function workspacePaths(given: string[], base: string, temporalAddress: string): string[] {
  if (!isLocalAddress(temporalAddress)) {
    const relative = given.filter((w) => !path.isAbsolute(w));
    if (relative.length)
      throw new ConfigError(
        `workspace ${relative.join(', ')} is relative, but Temporal (${temporalAddress}) is not on this machine: a workspace is a path on the tool workers, so give it absolute (e.g. --workspace /workspaces/a1)`,
      );
    return given.map((w) => path.normalize(w));
  }
  const workspace = given.map((w) => path.resolve(base, w));
  for (const root of workspace) {
    if (!existsSync(root))
      throw new ConfigError(`workspace root ${root} does not exist: create it, or pass --workspace DIR`);
    if (!statSync(root).isDirectory()) throw new ConfigError(`workspace root ${root} is not a directory`);
  }
  return workspace;
}

/** True when a Temporal address names this machine (loopback or localhost). */
export function isLocalAddress(address: string): boolean {
  const host = address.startsWith('[') ? address.slice(1, address.indexOf(']')) : address.split(':')[0];
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host ?? '');
}
