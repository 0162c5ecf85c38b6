/**
 * The scripted controller (docs/ARCHITECTURE.md#the-scripted-controller): a deterministic LLM for tests and the offline
 * demo. The turn
 * is chosen by the call's number in the task, never by a counter in here, so a retried call replays the
 * same turn; `error` fails the first `attempts` attempts of that turn, then the turn's content returns.
 */
import { promises as fs } from 'node:fs';
import { Context } from '@temporalio/activity';
import { parseScript, type Script } from '../../core/script';
import { normalizedError, type NormalizedError } from '../../core/errors';
import type { LlmRequest, LlmResponse } from '../../core/llm';
import type { LlmSpec } from '../../core/llm-spec';
import { classifyHttpStatus } from '../../core/errors/http';
import { LlmError } from '../../core/errors/activity';
import { openAllowed } from './files';
import type { LlmProvider } from './provider';

export { ScriptSchema, type Script, type ScriptedTurn } from '../../core/script';

/** What one attempt of a scripted call does: fail with an error, or answer. */
export type ScriptedStep =
  | { kind: 'fail'; error: NormalizedError; retryAfterMs?: number; delayMs: number }
  | { kind: 'answer'; response: LlmResponse; delayMs: number };

/** The largest script a worker reads (the CLI refuses bigger ones at the edge too). */
const MAX_SCRIPT_BYTES = 10 * 1024 * 1024;

const unreadable = (file: string, err: unknown) =>
  new Error(`cannot read the scripted controller file ${file}: ${(err as Error).message}`);

/**
 * A script that has ended with a final answer stands by it when the verification step asks again: the
 * model's last answer (text, no tool calls) is the next turn. Scripts need no extra turn for verify.
 */
function standsBy(messages: LlmRequest['messages']): Script['turns'][number] | undefined {
  const last = messages.at(-1);
  const answer = messages.at(-2);
  if (last?.role !== 'user' || answer?.role !== 'assistant' || answer.toolCalls?.length || answer.text === undefined)
    return undefined;
  return { text: answer.text };
}

/** Rough token estimate (4 characters a token) for turns that do not state their usage. */
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Decide what attempt `attempt` (from 1) of LLM call `req.callNumber` does. Pure: no clock, no I/O.
 *
 * ```ts
 * stepFor(script, { ...req, callNumber: 1 }, 1) // { kind: 'answer', ... }
 * ```
 */
export function stepFor(
  script: Script,
  req: Pick<LlmRequest, 'callNumber' | 'messages' | 'llm'> & Partial<Pick<LlmRequest, 'maxOutputTokens'>>,
  attempt: number,
  source = 'llm scripted',
): ScriptedStep {
  const turn = script.turns[req.callNumber - 1] ?? standsBy(req.messages);
  if (!turn) {
    return {
      kind: 'fail',
      delayMs: 0,
      error: normalizedError({
        code: 'EINVAL',
        kind: 'execution',
        source,
        message: `the scripted controller has ${script.turns.length} turn(s); LLM call #${req.callNumber} has none`,
        suggestion: 'Add turns to the script, ending with a turn that has only "text" (the final answer).',
      }),
    };
  }
  const delayMs = turn.delayMs ?? 0;
  if (turn.error && (turn.error.attempts === undefined || attempt <= turn.error.attempts)) {
    const error = classifyHttpStatus({
      status: turn.error.status,
      message: turn.error.message ?? `scripted error on call #${req.callNumber}`,
      source,
    });
    return { kind: 'fail', error, retryAfterMs: turn.error.retryAfterMs, delayMs };
  }
  const toolCalls = (turn.toolCalls ?? []).map((c, i) => {
    const call: LlmResponse['toolCalls'][number] = { id: c.id ?? `call-${req.callNumber}-${i + 1}`, name: c.name };
    if (c.rawArguments !== undefined) call.rawArguments = c.rawArguments;
    else call.args = c.args ?? {};
    return call;
  });
  const promptChars = req.messages.reduce((n, m) => n + ('text' in m && m.text ? m.text.length : 0), 0);
  const stated = turn.usage ?? {
    inputTokens: Math.ceil(promptChars / 4),
    outputTokens: estimateTokens((turn.text ?? '') + JSON.stringify(turn.toolCalls ?? [])),
  };
  // Like a real provider, a call never produces more than its maxOutputTokens (the budget's cap, §4).
  const usage =
    req.maxOutputTokens === undefined
      ? stated
      : { ...stated, outputTokens: Math.min(stated.outputTokens, req.maxOutputTokens) };
  const response: LlmResponse = { toolCalls, usage };
  if (turn.text !== undefined) response.text = turn.text;
  return { kind: 'answer', response, delayMs };
}

/** The spec this provider serves: `scripted:FILE`. */
export type ScriptedSpec = Extract<LlmSpec, { provider: 'scripted' }>;

/**
 * Create the scripted provider: the turn of each call comes from the script file, by call number and
 * attempt (Temporal's), so retries and replays see the same turn. With `dirs` (the worker's roots and
 * `llmDirs`), scripts are read only inside them.
 *
 * ```ts
 * const res = await callLlm(createScriptedProvider({ dirs: ['/srv/ws'] }), req, { provider: 'scripted', file: '/srv/ws/turns.json' });
 * ```
 */
export function createScriptedProvider(opts: ScriptDirs = {}): LlmProvider<ScriptedSpec> {
  const scripts = scriptCache(opts);
  return {
    // The CLI checks the file at the edge (core/script.ts); a worker has nothing else to check.
    preflight: () => undefined,
    async generate(req, { file }) {
      let script: Script;
      try {
        script = await scripts.load(file);
      } catch (err) {
        if (LlmError.isActivityError(err)) throw err;
        throw LlmError.of(
          { code: 'EINVAL', kind: 'execution', source: 'llm scripted', message: (err as Error).message },
          { cause: err },
        );
      }
      const step = stepFor(script, req, Context.current().info.attempt);
      // Context.sleep rejects as soon as the activity is cancelled.
      if (step.delayMs > 0) await Context.current().sleep(step.delayMs);
      if (step.kind === 'fail') throw new LlmError(step.error, step.retryAfterMs);
      return step.response;
    },
  };
}

/**
 * Where scripts may be read from: the worker's roots and `llmDirs`, or (a function) those of the task
 * the current call runs for, a tenant's part of the roots; absent: anywhere (library use without a policy).
 */
export interface ScriptDirs {
  dirs?: string[] | (() => string[]);
}

/** How many parsed scripts a provider keeps (the least recently read go first). */
const CACHED_SCRIPTS = 32;

/** What identifies one version of a file: a rewrite, a rename over it or a swap changes it. */
interface FileVersion {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  /** Set by the kernel at every change (a write, a rename, `utimes`): no one can put it back. */
  ctimeNs: bigint;
}

const sameVersion = (a: FileVersion, b: FileVersion) =>
  a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;

/**
 * The scripts a provider read, kept parsed while their file is unchanged (same device and inode, size,
 * modification and change time, to the nanosecond): a task calls its script at every tick, and reading
 * and validating the whole file each time was most of a scripted call's cost. A rewritten file is read
 * again. With `dirs`, only files inside them are opened (`openAllowed`).
 *
 * A call whose file is unchanged costs one `lstat` (one file system round trip, not the five of the
 * checked open): it serves what was read through the checked open of the same path, and a path that now
 * names a symlink, or another file, is not that version, so it goes through the checked open again.
 */
export function scriptCache(opts: ScriptDirs = {}) {
  const cached = new Map<string, FileVersion & { script: Script }>();
  const recall = (key: string, version: FileVersion): Script | undefined => {
    const hit = cached.get(key);
    if (!hit || !sameVersion(hit, version)) return undefined;
    cached.delete(key);
    cached.set(key, hit);
    return hit.script;
  };
  return {
    async load(file: string): Promise<Script> {
      const dirs = typeof opts.dirs === 'function' ? opts.dirs() : opts.dirs;
      // Kept per file and directories: a script one tenant's task may read is not another's to read.
      const key = `${dirs?.join('\0') ?? ''}\0${file}`;
      const now = cached.has(key) ? await fs.lstat(file, { bigint: true }).catch(() => undefined) : undefined;
      const unchanged = now?.isFile() ? recall(key, now) : undefined;
      if (unchanged) return unchanged;
      const handle = await openAllowed({ file, what: 'script', source: 'llm scripted', dirs }).catch((err: unknown) => {
        throw LlmError.isActivityError(err) ? err : unreadable(file, err);
      });
      try {
        let version: FileVersion;
        try {
          const { dev, ino, size, mtimeNs, ctimeNs } = await handle.stat({ bigint: true });
          version = { dev, ino, size, mtimeNs, ctimeNs };
        } catch (err) {
          throw unreadable(file, err);
        }
        const hit = recall(key, version);
        if (hit) return hit;
        if (version.size > BigInt(MAX_SCRIPT_BYTES))
          throw new Error(
            `the scripted controller file ${file} is ${version.size} bytes; a script may be at most ${MAX_SCRIPT_BYTES} bytes`,
          );
        const script = parseScript(
          await handle.readFile('utf8').catch((err: unknown) => {
            throw unreadable(file, err);
          }),
          file,
        );
        cached.delete(key);
        cached.set(key, { ...version, script });
        for (const old of cached.keys()) {
          if (cached.size <= CACHED_SCRIPTS) break;
          cached.delete(old);
        }
        return script;
      } finally {
        await handle.close();
      }
    },
  };
}
