/**
 * Human-readable output: how a task ended, an agent's status, and what to do next. The task's ticks
 * are printed live by cli/live.ts. `--json` prints the contract's JSON instead. Everything the CLI
 * prints goes through `say` (text) or `jsonLine` (JSON): data never reaches a terminal with the control
 * characters it may hold (model text, goals, messages, tool output, notes).
 */
import { approveCommand, denyCommand } from '../core/approval';
import type { AgentStatus } from '../workflows/messages';
import { reasonText, type TaskResult } from '../core/types';
import { pausedCause } from '../core/store-mix';

export { reasonText };

/**
 * Control characters a terminal acts on: C0 (ESC, BEL, CR, backspace… but not tab and newline, which
 * are layout), DEL, and C1 (U+0080–U+009F: U+009B is a CSI, U+009D an OSC on their own); and the
 * characters that make text read otherwise than it is: the bidirectional overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069, "Trojan Source") and the line and paragraph separators (U+2028, U+2029).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /\r\n|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const hex = (c: string) =>
  c
    .charCodeAt(0)
    .toString(16)
    .padStart(c.charCodeAt(0) > 0xff ? 4 : 2, '0');

/**
 * Text safe to print on a terminal: every control character escaped visibly, so an escape sequence in
 * data (ESC[31m, an OSC 8 link, an OSC 52 clipboard write, BEL) shows as text and does nothing. C0 and
 * DEL as `\x1b`, C1 as `\u009b`, a bidi override as `\u202e`; a CRLF line end is a newline.
 *
 * ```ts
 * terminalSafe('\x1b[31mred\x07') // '\\x1b[31mred\\x07'
 * ```
 */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c) =>
    c === '\r\n' ? '\n' : c <= '\u007f' ? `\\x${hex(c)}` : c <= '\u00ff' ? `\\u00${hex(c)}` : `\\u${hex(c)}`,
  );
}

/**
 * A value as one line of JSON (`--json`), with DEL and C1 escaped (`\u007f`, `\u009b`) as well as the C0
 * characters JSON.stringify escapes itself: the same value to a JSON reader, inert on a terminal.
 *
 * ```ts
 * jsonLine({ text: '\u009b31m' }) // '{"text":"\\u009b31m"}\n'
 * ```
 */
export function jsonLine(value: unknown): string {
  // These characters can only be inside JSON strings, where `\u00XX` means the same character.
  return `${JSON.stringify(value).replace(/[\u007f-\u009f]/g, (c) => `\\u00${hex(c)}`)}\n`;
}

/**
 * Print text from the CLI: escaped with `terminalSafe`, to stdout unless another stream is given.
 *
 * ```ts
 * say(`${formatStatus(s)}\n`);
 * ```
 */
export function say(text: string, stream: NodeJS.WritableStream = process.stdout): void {
  stream.write(terminalSafe(text));
}

/** How a task ended, and what to do next when it did not complete. */
export function formatOutcome(r: TaskResult): string {
  const out: string[] = [];
  out.push(`outcome ${r.outcome} · agent ${r.agentState}${r.reason ? ` (${reasonText(r.reason)})` : ''}`);
  out.push(
    `${r.ticks} tick(s) · ${r.tokensUsed} tokens${r.cachedInputTokens ? ` (${r.cachedInputTokens} cached)` : ''}${r.costUsd !== undefined ? ` · $${r.costUsd}` : ''} · ${r.toolCalls.length} tool call(s)`,
  );
  if (r.error)
    out.push(`error ${r.error.code}: ${r.error.message}${r.error.suggestion ? `\n  ${r.error.suggestion}` : ''}`);
  if (r.finalText !== undefined) out.push(`final answer: ${r.finalText}`);
  const next = nextStep(r.agentState, r.agentId, r.outcome === 'SUSPENDED', r.reason?.code, r.reason?.message);
  if (next) out.push(next);
  return out.join('\n');
}

/** What a budget stop needs before the unlock: the shared and cost budgets are raised apart (the reason says how). */
function budgetHint(reason?: string): string {
  if (reason === 'SHARED_BUDGET_EXHAUSTED' || reason === 'COST_BUDGET_EXHAUSTED')
    return ' (once an admin raised the budget, as the reason says)';
  return ' (with --add-tokens N after a budget stop)';
}

/** What a human does about a locked agent. */
export function nextStep(
  state: AgentStatus['agentState'],
  agentId: string,
  suspended: boolean,
  reason?: string,
  message?: string,
): string | undefined {
  if (state === 'SAFETY_LOCKOUT')
    return `next: look at why, then \`starry unlock ${agentId}${suspended ? ' --resume' : ''}\`${suspended ? ' continues the task (plain unlock ends it ABORTED)' : ''}`;
  if (state === 'STOPPED')
    return `next: \`starry unlock ${agentId}${suspended ? ' --resume' : ''}\`${suspended ? budgetHint(reason) : ''} lets it take tasks again`;
  if (state === 'ERROR_PAUSED') return `next: fix ${pausedCause(message)}, then \`starry unlock ${agentId}\``;
  return undefined;
}

/** An agent's state, for `starry status`. */
export function formatStatus(s: AgentStatus): string {
  const lines = [
    `agent ${s.agentId}: ${s.agentState}${s.reason ? ` (${reasonText(s.reason)})` : ''}`,
    `tokens ${s.tokensUsed} / ${s.tokenBudget}${s.cachedInputTokens ? ` (${s.cachedInputTokens} cached)` : ''}${s.costUsd !== undefined || s.costBudgetUsd !== undefined ? ` · cost $${s.costUsd ?? 0}${s.costBudgetUsd !== undefined ? ` / $${s.costBudgetUsd}` : ''}` : ''} · guide ${s.guide} · llm ${s.llm}`,
    s.limits
      ? `limits: ${Object.entries(s.limits)
          .filter(([f]) => f !== 'tokenBudget' && f !== 'costBudgetUsd')
          .map(([f, v]) => `${f} ${v}`)
          .join(' · ')}`
      : '',
    ...s.limitChanges.slice(-3).map(
      (c) =>
        `limits changed by ${c.by}: ${Object.keys(c.to)
          .map((f) => `${f} ${c.from[f as keyof typeof c.from]} → ${c.to[f as keyof typeof c.to]}`)
          .join(', ')}${c.note ? ` (${c.note})` : ''}`,
    ),
    s.currentTask
      ? `running ${s.currentTask.taskId} at tick ${s.currentTask.tick} (${s.currentTask.workflowId})${s.currentTask.traceId ? ` · trace ${s.currentTask.traceId}` : ''}`
      : 'no task running',
    ...(s.approvals ?? []).map(
      (p) =>
        `waiting for approval ${p.callId}: ${p.tool} ${JSON.stringify(p.args)} · \`${approveCommand(s.agentId, p.callId)}\` or \`${denyCommand(s.agentId, p.callId)}\``,
    ),
    s.suspendedTask ? `suspended ${s.suspendedTask.taskId}: \`starry unlock ${s.agentId} --resume\` continues it` : '',
    !s.suspendedTask ? (nextStep(s.agentState, s.agentId, false, s.reason?.code, s.reason?.message) ?? '') : '',
    `queue: ${s.queue.length ? s.queue.map((q) => `${q.taskId} (p${q.priority})`).join(', ') : 'empty'}`,
    `counters: ${s.counters.consecutiveFailures} consecutive failure(s), window [${s.counters.window.join(' ')}]`,
    s.cancelledTasks.length
      ? `cancelled by halt (resubmit to run): ${s.cancelledTasks.map((t) => t.taskId).join(', ')}`
      : '',
    s.tasks.length
      ? `recent tasks: ${s.tasks
          .slice(-5)
          .map((t) => `${t.taskId} ${t.outcome}`)
          .join(', ')}`
      : '',
  ];
  return lines.filter(Boolean).join('\n');
}
