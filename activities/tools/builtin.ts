/**
 * The built-in tools, defined with the same API as a worker's own (`define.ts`). Their schemas and
 * descriptions live in `core/tools.ts`, because the workflow checks a call to a built-in tool before it
 * schedules anything.
 */
import { TOOL_DEFINITIONS, type ToolArgs, type ToolName } from '../../core/tools';
import type { ToolContext } from './context';
import { defineTool, type ToolDefinition } from './define';
import { listDir, readFile, writeFile } from './fs';
import { httpGet } from './http';
import { runShell } from './shell';

function builtin<N extends ToolName>(
  name: N,
  run: (args: ToolArgs[N], ctx: ToolContext) => Promise<unknown>,
): ToolDefinition {
  const { description, schema } = TOOL_DEFINITIONS[name];
  return defineTool({
    name,
    description,
    input: schema,
    run: run as (args: unknown, ctx: ToolContext) => Promise<unknown>,
  });
}

/** `fs.read`, `fs.write`, `fs.list`, `shell.run`, `http.get`, in the order the model is told them. */
export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  builtin('fs.read', readFile),
  builtin('fs.write', writeFile),
  builtin('fs.list', listDir),
  builtin('shell.run', runShell),
  builtin('http.get', httpGet),
];
