/**
 * The tool registry's definitions (docs/ARCHITECTURE.md#configuration): names, descriptions and argument schemas, plus the
 * pre-execution check of a model's tool call (the "output anomaly" rung of §4). Pure: it runs inside the
 * workflow sandbox; the effects live in `activities/tools/`.
 */
import { z } from 'zod';
import { normalizedError, type NormalizedError } from './errors';
import type { LlmToolCall, ToolSpec } from './llm';

// Bounds keep the JSON Schema meaningful to the model (zod's default is Number.MAX_SAFE_INTEGER).
const MAX_READ_BYTES = 16 * 1024 * 1024;
const MAX_SHELL_TIMEOUT_MS = 10 * 60 * 1000;

// Objects are strict: a misspelt key (`file` for `path`) is reported as E_SCHEMA instead of silently ignored.
const FsReadArgs = z
  .object({
    path: z.string().describe('File to read, relative to the first workspace root or absolute inside a root.'),
    maxBytes: z
      .number()
      .int()
      .positive()
      .max(MAX_READ_BYTES)
      .optional()
      .describe('Read at most this many bytes from the start of the file.'),
  })
  .strict();

const FsWriteArgs = z
  .object({
    path: z.string().describe('File to write; missing parent directories inside the workspace are created.'),
    content: z.string().describe('Text to write (UTF-8).'),
    append: z.boolean().optional().describe('Append instead of replacing the file.'),
  })
  .strict();

const FsListArgs = z
  .object({
    path: z.string().optional().describe('Directory to list; defaults to the first workspace root.'),
  })
  .strict();

const ShellRunArgs = z
  .object({
    command: z.string().describe('Program to run; must be on the allow-list. No shell: no pipes, globs or redirects.'),
    args: z.array(z.string()).optional().describe('Arguments, one per element.'),
    cwd: z.string().optional().describe('Working directory inside the workspace; defaults to the first root.'),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(MAX_SHELL_TIMEOUT_MS)
      .optional()
      .describe('Kill the program after this many milliseconds (capped by the tool timeout).'),
  })
  .strict();

const HttpGetArgs = z
  .object({
    url: z.string().describe('http(s) URL whose host is on the allow-list.'),
  })
  .strict();

/**
 * Every tool: its description for the model, its argument schema, and the argument that names what
 * it acts on (shown in the activity's summary in the Web UI).
 */
export const TOOL_DEFINITIONS = {
  'fs.read': { description: 'Read a text file inside the workspace.', schema: FsReadArgs, summaryArg: 'path' },
  'fs.write': { description: 'Write or append a text file inside the workspace.', schema: FsWriteArgs, summaryArg: 'path' },
  'fs.list': { description: 'List a directory inside the workspace (name, type, size; sorted by name).', schema: FsListArgs, summaryArg: 'path' },
  'shell.run': {
    description: 'Run an allow-listed command inside the workspace; returns exitCode, stdout and stderr.',
    schema: ShellRunArgs,
    summaryArg: 'command',
  },
  'http.get': { description: 'HTTP GET a URL on an allow-listed host; returns status and body.', schema: HttpGetArgs, summaryArg: 'url' },
} as const satisfies Record<string, { description: string; schema: z.ZodObject; summaryArg: string }>;

export type ToolName = keyof typeof TOOL_DEFINITIONS;

/** Parsed arguments of each tool. */
export type ToolArgs = { [N in ToolName]: z.output<(typeof TOOL_DEFINITIONS)[N]['schema']> };

/** The names of every tool, in declaration order. */
export const TOOL_NAMES = Object.keys(TOOL_DEFINITIONS) as ToolName[];

/** True when `name` is a known tool. */
export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(TOOL_DEFINITIONS, name);
}

function parametersOf(name: ToolName): Record<string, unknown> {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(TOOL_DEFINITIONS[name].schema, { io: 'input' });
  return parameters;
}

/**
 * The tools an agent is offered: its config's `tools.allow` (in declaration order), or every tool.
 *
 * ```ts
 * offeredTools(['fs.list', 'fs.read']) // ['fs.read', 'fs.list']
 * ```
 */
export function offeredTools(allow?: readonly string[]): ToolName[] {
  return allow ? TOOL_NAMES.filter((name) => allow.includes(name)) : TOOL_NAMES;
}

/**
 * The tools as declared to the model: names, descriptions and JSON Schema parameters (plain objects),
 * only those `allow` offers when given.
 *
 * ```ts
 * const response = await llm({ ...request, tools: toolSpecs(config.tools.allow) });
 * ```
 */
export function toolSpecs(allow?: readonly string[]): ToolSpec[] {
  return offeredTools(allow).map((name) => ({ name, description: TOOL_DEFINITIONS[name].description, parameters: parametersOf(name) }));
}

const SUMMARY_CHARS = 80;

/**
 * A tool call's one-line summary for the Web UI: the tool and what it acts on (its `summaryArg`).
 *
 * ```ts
 * toolSummary('fs.read', { path: 'notes.md' }) // 'tool fs.read notes.md'
 * toolSummary('fs.list', {})                   // 'tool fs.list'
 * ```
 */
export function toolSummary(name: string, args: unknown): string {
  const target = isToolName(name) ? (args as Record<string, unknown> | undefined)?.[TOOL_DEFINITIONS[name].summaryArg] : undefined;
  return `tool ${name} ${typeof target === 'string' ? target.slice(0, SUMMARY_CHARS) : ''}`.trim();
}

/** A compact signature such as `fs.read({ path: string, maxBytes?: integer })`, for suggestions. */
export function toolSignature(name: ToolName): string {
  type Prop = { type?: unknown; items?: { type?: unknown } };
  const schema = parametersOf(name) as { properties?: Record<string, Prop>; required?: string[] };
  const required = new Set(schema.required ?? []);
  const params = Object.entries(schema.properties ?? {}).map(([key, prop]) => {
    const type = prop.type === 'array' ? `${String(prop.items?.type ?? 'unknown')}[]` : String(prop.type ?? 'unknown');
    return `${key}${required.has(key) ? '' : '?'}: ${type}`;
  });
  return `${name}({ ${params.join(', ')} })`;
}

/** Outcome of `validateToolCall`: parsed arguments, or the normalized error that replaces execution. */
export type ToolCallValidation = { ok: true; args: unknown } | { ok: false; error: NormalizedError };

const EXCERPT_CHARS = 80;

function excerpt(text: string): string {
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

/**
 * Check a model's tool call before anything runs: arguments that are not JSON (E_INVALID_JSON), an
 * unknown tool or one the agent's `tools.allow` leaves out (E_UNKNOWN_TOOL), arguments that do not match the schema (E_SCHEMA). All are execution
 * errors whose source is the tool name; when `rawArguments` parses, its value is used.
 *
 * ```ts
 * const checked = validateToolCall({ id: 'c1', name: 'fs.read', args: { path: 'notes.md' } });
 * if (!checked.ok) return failure(checked.error);
 * ```
 */
export function validateToolCall(call: LlmToolCall, allow?: readonly string[]): ToolCallValidation {
  const fail = (code: 'E_INVALID_JSON' | 'E_UNKNOWN_TOOL' | 'E_SCHEMA', message: string, suggestion: string): ToolCallValidation => ({
    ok: false,
    error: normalizedError({ code, message, source: call.name, suggestion, kind: 'execution' }),
  });

  let raw: unknown = call.args;
  if (call.rawArguments !== undefined) {
    try {
      raw = JSON.parse(call.rawArguments);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      return fail(
        'E_INVALID_JSON',
        `Arguments for ${call.name} are not valid JSON (${JSON.stringify(excerpt(call.rawArguments))}): ${reason}`,
        'Send the arguments as one JSON object, e.g. {"path": "notes.md"}.',
      );
    }
  }

  if (!isToolName(call.name)) {
    return fail('E_UNKNOWN_TOOL', `Unknown tool '${call.name}'.`, `Known tools: ${offeredTools(allow).join(', ')}.`);
  }
  // A tool the agent's config does not offer is unknown to this agent, whatever the worker has.
  if (allow && !allow.includes(call.name)) {
    return fail('E_UNKNOWN_TOOL', `Tool '${call.name}' is not offered to this agent.`, `Tools you can call: ${offeredTools(allow).join(', ')}.`);
  }

  // A call without arguments is checked as `{}`, so the schema names what is missing.
  const parsed = TOOL_DEFINITIONS[call.name].schema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
    return fail(
      'E_SCHEMA',
      `Invalid arguments for ${call.name}: ${issues.join('; ')}`,
      `Expected parameters: ${toolSignature(call.name)}.`,
    );
  }
  return { ok: true, args: parsed.data };
}
