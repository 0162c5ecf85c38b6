/**
 * The tools a task offers its model (docs/ARCHITECTURE.md, "Tools"): those its worker listed at the
 * task's start (built-in, the worker's own, its MCP servers'), or without a list the built-in tools the
 * config's `tools.allow` names; a new task's system prompt names them.
 */
import type { AgentConfig } from '../config';
import type { Guide } from '../guides';
import type { ChatMessage, ToolSpec } from '../llm';
import { offeredTools, toolSpecs } from '../tools';

/** The tool specs offered to the model. */
export function offeredSpecs(listed: ToolSpec[] | undefined, config: AgentConfig): ToolSpec[] {
  return listed ?? toolSpecs(config.tools.allow);
}

/** The names of the tools offered to the model. */
export function offeredNames(listed: ToolSpec[] | undefined, config: AgentConfig): string[] {
  return listed ? listed.map((t) => t.name) : offeredTools(config.tools.allow);
}

/**
 * A new task's system prompt once its worker listed the tools: it names them, and the commands
 * `shell.run` starts for it, which the worker resolves when the config names none.
 */
export function offeredPrompt(
  guide: Guide,
  config: AgentConfig,
  listed: ToolSpec[],
  shellAllow?: string[],
): ChatMessage {
  const named = shellAllow ? { ...config, tools: { ...config.tools, shellAllow } } : config;
  return {
    role: 'system',
    text: guide.systemPrompt(
      named,
      listed.map((t) => t.name),
    ),
  };
}
