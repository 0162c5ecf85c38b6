/**
 * The system prompt every guide shares. Guides differ only in who the agent is told it is and how failures
 * are framed; the facts (goal, roots, tools, limits, how to finish) are stated here once.
 */
import type { AgentConfig } from '../config';
import { offeredTools, TOOL_NAMES } from '../tools';

/** The tools an agent can call, from their one source (core/tools.ts): a new tool appears in every prompt. */
export { TOOL_NAMES };

/** The sentence that tells the model how to end a task; the loop ends on a turn without tool calls. */
export const FINISH_INSTRUCTION = 'When the goal is done, answer with your final answer and no tool call.';

/** What a guide adds to the shared prompt. */
export interface PromptFraming {
  /** Who the agent is, in this guide's voice. */
  role: string;
  /** How this guide presents a failed tool call. */
  failures: string;
}

/**
 * Build a guide's system prompt from the agent config and the guide's framing.
 *
 * ```ts
 * basePrompt(parseAgentConfig({ workspace: ['/w'] }, 'scripted:/x.json'), {
 *   role: 'You are a careful agent.',
 *   failures: 'Failures are stated as facts.',
 * });
 * ```
 */
export function basePrompt(
  agent: AgentConfig,
  framing: PromptFraming,
  tools: readonly string[] = offeredTools(agent.tools.allow),
): string {
  const { shellAllow, httpAllow } = agent.tools;
  const s = agent.safety;
  return [
    framing.role,
    'Your goal comes from the user: it is the task in the user message.',
    '',
    'Permitted workspace roots:',
    ...agent.workspace,
    '',
    `Tools: ${tools.join(', ')}.`,
    'They are confined to the permitted workspace roots: any path outside them is refused.',
    // Unset, the worker's list: the task states it once the worker has listed its tools (TaskRun.offer).
    shellAllow
      ? `shell.run starts only these commands: ${shellAllow.length ? shellAllow.join(', ') : '(none)'}.`
      : 'shell.run starts only the commands the worker allows.',
    `http.get reaches only these hosts: ${httpAllow.length ? httpAllow.join(', ') : '(none)'}.`,
    // Stating the breakers up front lets the model avoid them instead of discovering them.
    `Limits: at most ${s.maxTicks} ticks per task; ${s.repeatThreshold} identical failed calls in a row raise an alert; ` +
      `${s.frustrationThreshold} failed calls in a row stop the rest of the turn.`,
    '',
    `A failed tool call does not end the task: it comes back to you as the tool result. ${framing.failures}`,
    '',
    FINISH_INSTRUCTION,
    // The owner's instructions come after the preamble, in the same anchored system message.
    ...(agent.instructions
      ? ['', 'Instructions for this agent, from its owner (the rules above still hold):', agent.instructions]
      : []),
  ].join('\n');
}
