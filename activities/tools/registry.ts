/**
 * The tools a worker runs (the tool activity's registry): the built-in ones, the worker's own and,
 * through the MCP pool, those of the servers a task's config names.
 */
import type { ApprovalRule } from '../../core/approval';
import type { AgentConfig, McpServerConfig } from '../../core/config';
import type { ToolSpec } from '../../core/llm';
import type { ToolOrigin } from '../../core/telemetry';
import { allowMatches } from '../../core/tools';
import { BUILTIN_TOOLS } from './builtin';
import { specOf, type ToolDefinition } from './define';
import { McpPool } from './mcp';

/**
 * The tools a worker runs: the built-in ones, the worker's own (`createWorker({ tools })`) and, through
 * the pool, those of the MCP servers a task's config names (`<server>.<tool>`).
 */
export class ToolRegistry {
  private readonly byName = new Map<string, ToolDefinition>();
  /** Generated once: every task's listing offers them. */
  private readonly ownSpecs: readonly ToolSpec[];
  private pool?: McpPool;

  /** @throws TypeError when two tools share a name. */
  constructor(own: readonly ToolDefinition[] = []) {
    for (const tool of [...BUILTIN_TOOLS, ...own]) {
      if (this.byName.has(tool.name))
        throw new TypeError(`two tools are named ${tool.name}: every tool of a worker needs its own name`);
      this.byName.set(tool.name, tool);
    }
    this.ownSpecs = [...this.byName.values()].map(specOf);
  }

  /** The MCP connections of this worker (opened on first use). */
  get mcp(): McpPool {
    return (this.pool ??= new McpPool());
  }

  /** Close the MCP connections (stdio servers end). */
  async close(): Promise<void> {
    await this.pool?.close();
  }

  /** The tool named `name`, if the worker has it (MCP tools are not here). */
  get(name: string): ToolDefinition | undefined {
    return this.byName.get(name);
  }

  /** The worker's tools, built-in first, as declared to the model. */
  specs(): ToolSpec[] {
    return [...this.ownSpecs];
  }

  /** Where the tool `name` comes from, for its metrics: the worker, an MCP server of the task's config, or neither. */
  origin(name: string, tools: AgentConfig['tools']): ToolOrigin {
    return this.get(name) ? 'worker' : this.mcpTarget(name, tools) ? 'mcp' : 'unknown';
  }

  /** The MCP server and tool a name stands for, when the task's config names the server. */
  mcpTarget(
    name: string,
    tools: AgentConfig['tools'],
  ): { server: string; config: McpServerConfig; tool: string } | undefined {
    const dot = name.indexOf('.');
    const server = dot > 0 ? name.slice(0, dot) : undefined;
    const config = server !== undefined && tools.mcp ? tools.mcp[server] : undefined;
    return server !== undefined && config ? { server, config, tool: name.slice(dot + 1) } : undefined;
  }

  /**
   * What is wrong with a task's `tools.allow` or its approval rules, if anything: each entry must name
   * one of the worker's tools, or a tool (or `server.*`) of an MCP server in the task's `tools.mcp`. A
   * rule naming no tool would never ask (a typo, `fs.wirte`, that lets `fs.write` run unasked): refused alike.
   */
  refusedAllow(tools: Pick<AgentConfig['tools'], 'allow' | 'mcp' | 'approval'>): string | undefined {
    const names = [...this.byName.keys()];
    const servers = Object.keys(tools.mcp ?? {});
    const known = (entry: string) =>
      entry === '*' || names.some((n) => allowMatches(entry, n)) || servers.some((s) => entry.startsWith(`${s}.`));
    const ruleTool = (rule: ApprovalRule) => (typeof rule === 'string' ? rule : rule.tool);
    const wrong = [
      ['tools.allow', (tools.allow ?? []).filter((e) => !known(e))],
      ['tools.approval.ask', (tools.approval?.ask ?? []).map(ruleTool).filter((e) => !known(e))],
      ['tools.approval.deny', (tools.approval?.deny ?? []).map(ruleTool).filter((e) => !known(e))],
    ] as const;
    const said = wrong.filter(([, unknown]) => unknown.length);
    if (!said.length) return undefined;
    return (
      said.map(([field, unknown]) => `${field}: ${unknown.map((e) => `'${e}'`).join(', ')}`).join('; ') +
      ` ${said.length === 1 && said[0]?.[1].length === 1 ? 'is' : 'are'} not a tool of this worker (its tools: ${names.join(', ')}` +
      `${servers.length ? `; MCP servers of this config: ${servers.map((s) => `${s}.*`).join(', ')}` : '; no MCP server in tools.mcp'}). ` +
      'Use one of them, or register the tool on the worker (createWorker({ tools })) or name its MCP server in tools.mcp.'
    );
  }
}
