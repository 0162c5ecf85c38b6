/**
 * Scripted scenarios for the safety ladder (docs/ARCHITECTURE.md#the-safety-ladder), shared by the integration tests
 * and by the
 * history recorder (test/fixtures/record-histories.ts), so both run exactly the same scripts.
 *
 * Failures are deterministic: `/root/secret.txt` is outside every workspace (EPERM, always the same
 * fingerprint), `missing-N.txt` does not exist inside it (ENOENT, one fingerprint per N), and `fs.list`
 * of the workspace succeeds.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TaskConfig, AgentConfigInput } from '../../core/config';
import type { ScriptedTurn } from '../../core/script';
import { RefusedError } from '../../client/agent-client';
import type { AgentStatus } from '../../core/contract';
import type { TaskResult } from '../../core/types';
import { projectRoot } from '../../dev/paths';
import { makeWorkspace, scriptedConfig, uniqueId, writeScript, type Harness } from './harness';

/** A tool call of a scripted turn, and a turn: the scripted controller's own schema (core/script.ts). */
export type ScriptedCall = NonNullable<ScriptedTurn['toolCalls']>[number];
export type { ScriptedTurn };

/** Stated usage of every turn unless a scenario says otherwise: 110 tokens a call. */
export const USAGE = { inputTokens: 100, outputTokens: 10 } as const;

export const read = (p: string): ScriptedCall => ({ name: 'fs.read', args: { path: p } });
/** EPERM, always the same call (one fingerprint). */
export const SECRET = read('/root/secret.txt');
/** ENOENT inside the workspace; a different fingerprint for every `n`. */
export const missing = (n: number): ScriptedCall => read(`missing-${n}.txt`);
/** A call that succeeds. */
export const LIST: ScriptedCall = { name: 'fs.list', args: {} };
/** Output anomalies (never executed): invalid JSON, an unknown tool, schema-invalid arguments. */
export const BAD_JSON: ScriptedCall = { name: 'fs.read', rawArguments: '{"path": "notes.md"' };
export const UNKNOWN_TOOL: ScriptedCall = { name: 'fs.delete', args: { path: 'notes.md' } };
export const BAD_SCHEMA: ScriptedCall = { name: 'fs.read', args: { file: 'notes.md' } };

/** A turn that calls the given tools. */
export const turn = (...toolCalls: ScriptedCall[]): ScriptedTurn => ({
  text: `calling ${toolCalls.length} tool(s)`,
  toolCalls,
  usage: { ...USAGE },
});
/** A final answer. */
export const done = (text = 'Done.'): ScriptedTurn => ({ text, usage: { ...USAGE } });
/** `n` turns of the same single call. */
export const times = (n: number, call: ScriptedCall): ScriptedTurn[] => Array.from({ length: n }, () => turn(call));

export interface Scenario {
  /** Kebab-case; also the prefix of the recorded history files. */
  name: string;
  goal: string;
  turns: ScriptedTurn[];
  /** Agent config overrides (safety thresholds, ...). */
  config?: AgentConfigInput;
  /**
   * Point the workspace at a root that does not exist and cannot be made (below a file; a missing one the
   * worker can make it makes): the tool-side fatal path.
   */
  missingWorkspace?: boolean;
}

/** Files of every scenario's workspace. */
export const WORKSPACE_FILES = { 'notes.md': '# Notes\nagents work only inside ./workspace.\n' };

/** The scenarios, by rung. */
export const SCENARIOS = {
  /** The seeds' concrete scenario (examples/eperm): EPERM is pain, the agent finds the permitted path. */
  eperm: {
    name: 'eperm',
    goal: 'Tell me what /root/secret.txt says.',
    turns: (
      JSON.parse(readFileSync(path.join(projectRoot(), 'examples/eperm/turns.json'), 'utf8')) as {
        turns: ScriptedTurn[];
      }
    ).turns,
  },
  /** Three identical failures: the repeat alert on the third, then the agent recovers. */
  repeatAlert: {
    name: 'repeat-alert',
    goal: 'Read /root/secret.txt.',
    turns: [...times(3, SECRET), done()],
  },
  /** A fourth identical failure after the alert: SAFETY_LOCKOUT (REPEATED_FAILURE), task suspended. */
  repeatLockout: {
    name: 'repeat-lockout',
    goal: 'Read /root/secret.txt, whatever it takes.',
    turns: [...times(4, SECRET), done()],
  },
  /** Four identical failures in one turn: the alert comes after the turn's results, the 4th still locks. */
  repeatLockoutOneTurn: {
    name: 'repeat-lockout-one-turn',
    goal: 'Read /root/secret.txt four times at once.',
    turns: [turn(SECRET, SECRET, SECRET, SECRET, LIST), done()],
  },
  /** A A B A: four failures in a row, never three identical ones in a row. */
  aaba: {
    name: 'aaba',
    goal: 'Try a few paths.',
    turns: [turn(SECRET), turn(SECRET), turn(missing(1)), turn(SECRET), done()],
  },
  /** A A ok A A: the success resets the same-fingerprint run. */
  aaOkAa: {
    name: 'aa-ok-aa',
    goal: 'Try, look around, try again.',
    turns: [turn(SECRET), turn(SECRET), turn(LIST), turn(SECRET), turn(SECRET), done()],
  },
  /**
   * Eight different failures over two turns: frustration at 5 skips the 6th call of the first turn;
   * the cascade trips at the 8th executed failure and skips the rest of the second turn.
   */
  frustrationCascade: {
    name: 'frustration-cascade',
    goal: 'Find the config file.',
    turns: [turn(...[1, 2, 3, 4, 5, 6].map(missing)), turn(...[7, 8, 9, 10].map(missing)), done()],
  },
  /** Eight different failures, one a turn: frustration at tick 5, ERROR_CASCADE at tick 8. */
  cascadeOnePerTurn: {
    name: 'cascade-one-per-turn',
    goal: 'Find the config file, one guess at a time.',
    turns: [...[1, 2, 3, 4, 5, 6, 7, 8].map((n) => turn(missing(n))), done()],
  },
  /** 8 failures among 9 operations, never 5 in a row: the cascade without frustration. */
  cascadeAcrossSuccess: {
    name: 'cascade-across-success',
    goal: 'Find the config file, listing in between.',
    turns: [
      turn(missing(1), missing(2), missing(3), missing(4), LIST, missing(5), missing(6), missing(7), missing(8), LIST),
      done(),
    ],
  },
  /** safety.maxTicks 3 and a model that never stops calling tools. */
  loopCap: {
    name: 'loop-cap',
    goal: 'List the workspace forever.',
    turns: times(5, LIST),
    config: { safety: { maxTicks: 3 } },
  },
  /**
   * tokenBudget 1000, calls of 150 input tokens that would produce 300 output tokens: 450, 900, then the
   * third call is capped to the 100 tokens left (1150 in all), and the fourth never starts.
   */
  budgetStop: {
    name: 'budget-stop',
    goal: 'List the workspace until the budget runs out.',
    turns: Array.from({ length: 5 }, () => ({ ...turn(LIST), usage: { inputTokens: 150, outputTokens: 300 } })),
    config: { safety: { tokenBudget: 1000 } },
  },
  /** Invalid JSON, an unknown tool and schema-invalid arguments in one turn: failed, never executed. */
  outputAnomalies: {
    name: 'output-anomalies',
    goal: 'Read notes.md.',
    turns: [turn(BAD_JSON, UNKNOWN_TOOL, BAD_SCHEMA), done()],
  },
  /** The same invalid JSON three times: counted like any failure, so the repeat alert fires. */
  repeatedBadJson: {
    name: 'repeated-bad-json',
    goal: 'Read notes.md.',
    turns: [...times(3, BAD_JSON), done()],
  },
  /** Task 1 of the carried-counters pair: two identical failures, then an answer. */
  carriedFirst: {
    name: 'carried-first',
    goal: 'Read /root/secret.txt.',
    turns: [turn(SECRET), turn(SECRET), done('I could not read it.')],
  },
  /** Task 2 of the pair: one more identical failure is the third in a row for the agent. */
  carriedSecond: {
    name: 'carried-second',
    goal: 'Read /root/secret.txt again.',
    turns: [turn(SECRET), done('Still denied.')],
  },
  /** The LLM's credential is refused (401): fatal, the task fails and the agent pauses. */
  fatalLlm: {
    name: 'fatal-llm',
    goal: 'Say hello.',
    turns: [{ error: { status: 401, message: 'invalid API key' } }],
  },
  /** The workspace root is missing and cannot be made: the tool's E_INTERNAL is fatal. */
  fatalTool: {
    name: 'fatal-tool',
    goal: 'Read notes.md.',
    turns: [turn(read('notes.md')), done()],
    missingWorkspace: true,
  },
} satisfies Record<string, Scenario>;

export interface ScenarioRun {
  agentId: string;
  taskId: string;
  workflowId: string;
  /** The task's result: what `starry run --json` prints. */
  result: TaskResult;
  config: TaskConfig;
  workspace: string;
}

/** A workspace root inside the test workers' roots that no worker can make: a directory below a file. */
function unmakeableRoot(): string {
  const file = path.join(os.tmpdir(), uniqueId('starry-gone'));
  writeFileSync(file, 'a file, not a directory');
  return path.join(file, 'ws');
}

/**
 * Submit a scenario's task to an agent (a new one unless `agentId` is given) and wait for its result.
 *
 * ```ts
 * const run = await runScenario(h, SCENARIOS.repeatLockout);
 * expect(run.result.outcome).toBe('SUSPENDED');
 * ```
 */
export async function runScenario(
  h: Harness,
  scenario: Scenario,
  opts: { agentId?: string } = {},
): Promise<ScenarioRun> {
  const workspace = scenario.missingWorkspace ? unmakeableRoot() : makeWorkspace(WORKSPACE_FILES);
  const config = scriptedConfig(writeScript(scenario.turns), workspace, scenario.config);
  const agentId = opts.agentId ?? uniqueId(scenario.name);
  const { taskId, workflowId } = await h.agents.submit(agentId, { goal: scenario.goal, config });
  const result = await h.agents.waitForTask(agentId, taskId);
  return { agentId, taskId, workflowId, result, config, workspace };
}

/**
 * The run ended with the agent locked, as every client sees it: the task's result (SUSPENDED, in the
 * lock's state, with its reason and tick count; the contract's shape), the agent's status (the same
 * lock, the task kept for `unlock --resume`), and a new task refused with a `Refused` error.
 *
 * ```ts
 * await expectLocked(h, run, { agentState: 'SAFETY_LOCKOUT', code: 'LOOP_CAP', ticks: 3 });
 * ```
 */
export async function expectLocked(
  h: Harness,
  run: ScenarioRun,
  lock: { agentState: 'SAFETY_LOCKOUT' | 'ERROR_PAUSED' | 'STOPPED'; code: string; ticks: number },
): Promise<AgentStatus> {
  const { agentState, code, ticks } = lock;
  expect(contractViolations(run.result)).toEqual([]);
  expect(run.result).toMatchObject({ outcome: 'SUSPENDED', agentState, ticks, reason: { code } });
  const status = await h.agents.status(run.agentId);
  expect(status).toMatchObject({ agentState, reason: { code }, suspendedTask: { taskId: run.taskId } });
  await expect(h.agents.submit(run.agentId, { goal: 'refused while locked', config: run.config })).rejects.toThrow(
    RefusedError,
  );
  return status;
}

const OUTCOMES = ['COMPLETED', 'FAILED', 'CANCELLED', 'SUSPENDED', 'ABORTED'];
const AGENT_STATES = ['WAITING_FOR_EVENT', 'EXECUTING', 'SAFETY_LOCKOUT', 'ERROR_PAUSED', 'STOPPED'];
const REASONS = [
  'LOOP_CAP',
  'BUDGET_EXHAUSTED',
  'REPEATED_FAILURE',
  'ERROR_CASCADE',
  'SYSTEM_HALT',
  'FATAL',
  'HISTORY_LIMIT',
  'COST_BUDGET_EXHAUSTED',
  'SHARED_BUDGET_EXHAUSTED',
];
const CALL_STATUSES = ['ok', 'failed', 'skipped'];
const INJECTION_KINDS = ['PAIN', 'REPEAT_ALERT', 'FRUSTRATION', 'VERIFY', 'MESSAGE', 'SUMMARY'];
const ERROR_KINDS = ['execution', 'transient', 'fatal'];
// §6's fields, plus `error` (what failed a FAILED task).
const RESULT_KEYS = [
  'agentId',
  'taskId',
  'workflowId',
  'outcome',
  'agentState',
  'reason',
  'ticks',
  'tokensUsed',
  'cachedInputTokens',
  'costUsd',
  'toolCalls',
  'injections',
  'finalText',
  'traceId',
  'omitted',
  'error',
  'transcript',
];

/**
 * How a result, as `starry run --json` prints it (one JSON object), departs from the result contract
 * (docs/ARCHITECTURE.md#result-json): an empty
 * list when it is the contract's shape.
 *
 * ```ts
 * expect(contractViolations(run.result)).toEqual([]);
 * ```
 */
export function contractViolations(result: TaskResult): string[] {
  const r = JSON.parse(JSON.stringify(result)) as Record<string, unknown>;
  const bad: string[] = [];
  const check = (ok: boolean, what: string) => void (ok || bad.push(what));
  const oneOf = (v: unknown, values: string[]) => typeof v === 'string' && values.includes(v);
  for (const key of Object.keys(r)) check(RESULT_KEYS.includes(key), `unexpected key ${key}`);
  for (const key of ['agentId', 'taskId', 'workflowId']) check(typeof r[key] === 'string', `${key} is not a string`);
  check(oneOf(r.outcome, OUTCOMES), `outcome ${String(r.outcome)}`);
  check(oneOf(r.agentState, AGENT_STATES), `agentState ${String(r.agentState)}`);
  check(Number.isInteger(r.ticks), 'ticks is not an integer');
  check(Number.isInteger(r.tokensUsed), 'tokensUsed is not an integer');
  if (r.reason !== undefined) {
    const reason = r.reason as Record<string, unknown>;
    check(oneOf(reason.code, REASONS), `reason.code ${String(reason.code)}`);
    check(typeof reason.message === 'string' && reason.message !== '', 'reason.message is empty');
  }
  const calls = (Array.isArray(r.toolCalls) ? r.toolCalls : []) as Array<Record<string, unknown>>;
  check(Array.isArray(r.toolCalls), 'toolCalls is not an array');
  calls.forEach((c, i) => {
    check(Number.isInteger(c.tick) && (c.tick as number) >= 1, `toolCalls[${i}].tick`);
    check(typeof c.name === 'string', `toolCalls[${i}].name`);
    check('args' in c, `toolCalls[${i}].args is missing`);
    check(typeof c.fingerprint === 'string' && /^[0-9a-f]{16}$/.test(c.fingerprint), `toolCalls[${i}].fingerprint`);
    check(oneOf(c.status, CALL_STATUSES), `toolCalls[${i}].status ${String(c.status)}`);
    check(
      (c.status === 'ok') === (c.error === undefined),
      `toolCalls[${i}]: an error must come with (only) a failed or skipped status`,
    );
    if (c.error !== undefined) {
      const e = c.error as Record<string, unknown>;
      check(
        typeof e.code === 'string' && typeof e.message === 'string' && typeof e.source === 'string',
        `toolCalls[${i}].error fields`,
      );
      check(oneOf(e.kind, ERROR_KINDS), `toolCalls[${i}].error.kind ${String(e.kind)}`);
    }
  });
  const injections = (Array.isArray(r.injections) ? r.injections : []) as Array<Record<string, unknown>>;
  check(Array.isArray(r.injections), 'injections is not an array');
  injections.forEach((j, i) => {
    check(Number.isInteger(j.tick) && (j.tick as number) >= 1, `injections[${i}].tick`);
    check(oneOf(j.kind, INJECTION_KINDS), `injections[${i}].kind ${String(j.kind)}`);
    check(typeof j.text === 'string' && j.text !== '', `injections[${i}].text is empty`);
  });
  check(r.finalText === undefined || typeof r.finalText === 'string', 'finalText is not a string');
  return bad;
}
