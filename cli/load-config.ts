/**
 * Agent config from the command line: `--config FILE` plus flag overrides, validated once here (the
 * edge) with messages that say what is wrong and how to fix it. Paths become absolute, because the
 * worker may run in another directory.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
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
export function loadAgentConfig(flags: ConfigFlags, cwd = process.cwd()): TaskConfig {
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
  if (flags.workspace?.length) merged.workspace = flags.workspace.map((w) => path.resolve(cwd, w));
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
  const workspace = config.workspace.map((w) => path.resolve(base, w));
  for (const root of workspace) {
    if (!existsSync(root))
      throw new ConfigError(`workspace root ${root} does not exist: create it, or pass --workspace DIR`);
    if (!statSync(root).isDirectory()) throw new ConfigError(`workspace root ${root} is not a directory`);
  }
  return { ...config, llm, workspace };
}
