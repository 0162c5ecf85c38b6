/**
 * Printing a task as it runs (`starry run`, `starry watch`) or ran (`starry logs`): each tick's model
 * text, tool calls and results, pain and alerts, signals; on a terminal, a live line for the call in
 * flight. The events come from the task's workflow history (client/follow.ts).
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { followTask, type TaskEvent } from '../client/follow';
import { approveCommand, denyCommand } from '../core/approval';
import { cut } from '../core/compact';
import { reasonText, say, terminalSafe } from './format';

const oneLine = (v: unknown, max = 160) =>
  cut(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''), max).replace(/\s+/g, ' ');
const indent = (text: string, by = '    ') => text.replace(/^/gm, by);

/** A terminal line that shows what is in flight, rewritten in place; nothing when stderr is not a TTY. */
export class InFlightLine {
  private shown = false;
  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}
  show(text: string): void {
    if (!this.stream.isTTY) return;
    // Our own control sequence (return, erase the line), then the text, escaped: it names a tool the model chose.
    this.stream.write(`\r\x1b[2K${terminalSafe(text)}`);
    this.shown = true;
  }
  clear(): void {
    if (this.shown) this.stream.write('\r\x1b[2K');
    this.shown = false;
  }
}

/** The lines an event prints (empty for events that only move the in-flight line). */
export function eventLines(e: TaskEvent): string[] {
  switch (e.kind) {
    case 'llm-call':
      return e.injected.map((i) => `  ⤷ ${i.label}:\n${indent(cut(i.text.trim(), 2000))}`);
    case 'llm':
      return [`tick ${e.tick} · ${e.tokens} tokens${e.text ? `\n${indent(cut(e.text.trim(), 4000), '  │ ')}` : ''}`];
    case 'llm-failed':
      return [`tick ${e.tick} · the LLM call failed: ${e.message}`];
    case 'summary': {
      const calls = `calls ${e.calls[0]}–${e.calls[1]}`;
      if (e.error) return [`  ≡ no summary of ${calls} (they left the context without one): ${oneLine(e.error, 300)}`];
      return [`  ≡ ${calls} summarized (${e.tokens ?? 0} tokens):\n${indent(cut((e.text ?? '').trim(), 2000))}`];
    }
    case 'tool-call':
      return [`  → ${e.name} ${oneLine(e.args)}`];
    case 'tool':
      return [
        `  ← ${e.name} ${e.ok ? 'ok' : `FAILED ${oneLine(e.error ? reasonText({ code: e.error.code, message: e.error.message }) : '', 300)}`}`,
      ];
    case 'tool-failed':
      return [`  ← ${e.name} FAILED: ${oneLine(e.message, 300)}`];
    case 'alert':
      return [`  ! daemon alert raised: ${e.reason}`];
    case 'signal': {
      const p = (e.payload ?? {}) as { by?: string; note?: string; text?: string };
      if (e.name === 'SYSTEM_HALT' || e.name === 'STOP')
        return [`  ■ SYSTEM_HALT${p.by ? ` by ${p.by}` : ''}${p.note ? `: ${p.note}` : ''}`];
      if (e.name === 'message') return [`  ✉ message${p.by ? ` from ${p.by}` : ''}: ${oneLine(p.text ?? '', 300)}`];
      if (e.name === 'approvalDecided') {
        const d = e.payload as { callId?: string; decision?: string; reason?: string; args?: unknown };
        return [
          d.decision === 'approve'
            ? `  ✓ ${d.callId} approved by ${p.by ?? 'a human'}${d.args ? ` with edited arguments ${oneLine(d.args)}` : ''}`
            : `  ✗ ${d.callId} denied by ${p.by ?? 'a human'}${d.reason ? `: ${oneLine(d.reason, 300)}` : ''}`,
        ];
      }
      return [];
    }
    case 'approval':
      return e.waiting.map(
        (w) =>
          `  ⏸ ${w.callId} ${w.tool} ${oneLine(w.args)} waits for approval (rule ${w.rule}): \`${approveCommand(e.agentId, w.callId)}\` or \`${denyCommand(e.agentId, w.callId)}\``,
      );
    case 'state':
      // The agent's state shows in the task's end and in `starry status`; the live view keeps to the ticks.
      return [];
    case 'continued':
      return [`  ↻ the task continued in a fresh history (run ${e.runId})`];
    case 'end':
      return e.status === 'completed' ? [] : [`  task workflow ${e.status}${e.message ? `: ${e.message}` : ''}`];
  }
}

/** What the in-flight line says after an event, or nothing. */
function inFlight(e: TaskEvent): string | undefined {
  if (e.kind === 'llm-call') return `  … tick ${e.tick}: waiting for the model`;
  if (e.kind === 'tool-call') return `  … ${e.name} running`;
  if (e.kind === 'approval') return `  … waiting for a human to decide ${e.waiting.map((w) => w.callId).join(', ')}`;
  return undefined;
}

/**
 * Print a task's events to `out` as they happen, waiting for its workflow to exist (it may be queued).
 * Resolves when the task workflow closes or `signal` aborts.
 */
export async function printTask(
  client: Client,
  workflowId: string,
  opts: { signal?: AbortSignal; live?: boolean; out?: NodeJS.WritableStream } = {},
): Promise<void> {
  const out = opts.out ?? process.stdout;
  const line = new InFlightLine();
  const live = opts.live ?? true;
  for (;;) {
    if (opts.signal?.aborted) return;
    try {
      for await (const e of followTask(client, workflowId, { ...(opts.signal ? { signal: opts.signal } : {}), live })) {
        line.clear();
        for (const l of eventLines(e)) say(`${l}\n`, out);
        const flying = inFlight(e);
        if (flying) line.show(flying);
      }
      line.clear();
      return;
    } catch (err) {
      line.clear();
      // Queued behind other tasks: its workflow starts later.
      if (!(err instanceof WorkflowNotFoundError || /not found/i.test((err as Error).message)) || !live) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
