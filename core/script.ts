/**
 * The scripted controller's file (`--llm scripted:FILE`): a deterministic LLM for tests and the offline
 * demo, documented in docs/ARCHITECTURE.md. Checked at the edge (the CLI, before anything starts) and
 * again by the activity that plays it, with the same schema.
 */
import { z } from 'zod';
import { ConfigError, formatIssues } from './config';

const ToolCallSchema = z
  .object({
    id: z.string().optional(),
    name: z.string().min(1),
    args: z.unknown().optional(),
    rawArguments: z.string().optional(),
  })
  .strict();

const TurnSchema = z
  .object({
    text: z.string().optional(),
    toolCalls: z.array(ToolCallSchema).optional(),
    usage: z
      .object({
        inputTokens: z.number().int().min(0),
        outputTokens: z.number().int().min(0),
        /** Of the input tokens, those a provider would have read from its cache (tests of cost accounting). */
        cachedInputTokens: z.number().int().min(0).optional(),
      })
      .strict()
      .optional(),
    delayMs: z.number().int().min(0).optional(),
    error: z
      .object({
        status: z.number().int().min(400).max(599),
        message: z.string().optional(),
        retryAfterMs: z.number().int().min(0).optional(),
        attempts: z.number().int().positive().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export const ScriptSchema = z
  .object({ turns: z.array(TurnSchema).min(1, 'a script needs at least one turn') })
  .strict();
export type Script = z.infer<typeof ScriptSchema>;
export type ScriptedTurn = z.infer<typeof TurnSchema>;

/**
 * Parse JSON text from a file, with a message that names the file and the problem but never quotes the
 * file's content (V8's message does: a scripted path of `/etc/passwd` must not print `root:x:0:0`).
 *
 * ```ts
 * parseJsonText('root:x:0:0', 'the scripted controller file /etc/passwd')
 * // throws ConfigError: the scripted controller file /etc/passwd is not valid JSON (Unexpected token)
 * ```
 */
export function parseJsonText(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const reason = (err as Error).message.replace(/,\s*".*$/s, '').replace(/\s*'.*?'/, '');
    throw new ConfigError(`${what} is not valid JSON (${reason})`);
  }
}

/**
 * Check a script file's text. A file that is not a script at all (no `turns` list) is refused without
 * naming anything in it: its keys are not the caller's business (a policy file, say).
 *
 * @throws ConfigError naming the file and each bad field of a script.
 */
export function parseScript(text: string, file: string): Script {
  const what = `the scripted controller file ${file}`;
  const json = parseJsonText(text, what);
  if (typeof json !== 'object' || json === null || !Array.isArray((json as { turns?: unknown }).turns)) {
    throw new ConfigError(`${what} is not a script: a script is a JSON object with a "turns" list`);
  }
  const parsed = ScriptSchema.safeParse(json);
  if (!parsed.success) throw new ConfigError(`${what} is invalid:\n${formatIssues(parsed.error)}`);
  return parsed.data;
}
