/**
 * Human-readable output: a task's transcript (tool calls, pain, alerts, final answer) and an agent's
 * status. `--json` prints the contract's JSON instead.
 */
import type { AgentStatus } from '../workflows/messages';
import type { TaskResult } from '../core/types';

const indent = (text: string, pad = '      ') => text.split('\n').map((l) => pad + l).join('\n');

const MARK: Record<string, string> = { PAIN: 'pain', REPEAT_ALERT: 'repeat alert', FRUSTRATION: 'frustration', VERIFY: 'verify', MESSAGE: 'message' };

/** The transcript of one task, tick by tick. */
export function formatTranscript(r: TaskResult): string {
  const out: string[] = [];
  const ticks = new Set([...r.toolCalls.map((c) => c.tick), ...r.injections.map((i) => i.tick)]);
  for (const tick of [...ticks].sort((a, b) => a - b)) {
    out.push(`tick ${tick}`);
    for (const c of r.toolCalls.filter((x) => x.tick === tick)) {
      const args = typeof c.args === 'string' ? c.args : JSON.stringify(c.args);
      const status = c.status === 'ok' ? 'ok' : c.status === 'skipped' ? 'skipped' : `FAILED ${c.error?.code ?? ''}`.trim();
      out.push(`  → ${c.name} ${args}  [${status}]`);
    }
    for (const i of r.injections.filter((x) => x.tick === tick)) {
      out.push(`  ⤷ ${MARK[i.kind] ?? i.kind} injected:`);
      out.push(indent(i.text.trim()));
    }
  }
  out.push('');
  out.push(`outcome ${r.outcome} · agent ${r.agentState}${r.reason ? ` (${r.reason.code}: ${r.reason.message})` : ''}`);
  out.push(`${r.ticks} tick(s) · ${r.tokensUsed} tokens · ${r.toolCalls.length} tool call(s)`);
  if (r.error) out.push(`error ${r.error.code}: ${r.error.message}${r.error.suggestion ? `\n  ${r.error.suggestion}` : ''}`);
  if (r.finalText !== undefined) out.push(`final answer: ${r.finalText}`);
  return out.join('\n');
}

/** An agent's state, for `starry status`. */
export function formatStatus(s: AgentStatus): string {
  const lines = [
    `agent ${s.agentId}: ${s.agentState}${s.reason ? ` (${s.reason.code}: ${s.reason.message})` : ''}`,
    `tokens ${s.tokensUsed} / ${s.tokenBudget} · guide ${s.guide} · llm ${s.llm}`,
    s.currentTask ? `running ${s.currentTask.taskId} at tick ${s.currentTask.tick} (${s.currentTask.workflowId})` : 'no task running',
    s.suspendedTask ? `suspended ${s.suspendedTask.taskId}: \`starry unlock ${s.agentId} --resume\` continues it` : '',
    `queue: ${s.queue.length ? s.queue.map((q) => `${q.taskId} (p${q.priority})`).join(', ') : 'empty'}`,
    `counters: ${s.counters.consecutiveFailures} consecutive failure(s), window [${s.counters.window.join(' ')}]`,
    s.cancelledTasks.length ? `cancelled by halt (resubmit to run): ${s.cancelledTasks.map((t) => t.taskId).join(', ')}` : '',
    s.tasks.length ? `recent tasks: ${s.tasks.slice(-5).map((t) => `${t.taskId} ${t.outcome}`).join(', ')}` : '',
  ];
  return lines.filter(Boolean).join('\n');
}

/** The Web UI page of a workflow. */
export function webUiLink(uiBase: string, workflowId: string, namespace = 'default'): string {
  return `${uiBase}/namespaces/${namespace}/workflows/${encodeURIComponent(workflowId)}`;
}
