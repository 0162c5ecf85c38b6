/**
 * The tool registry's definitions (docs/ARCHITECTURE.md#configuration): names, descriptions and argument schemas, plus
 * the
 * pre-execution check of a model's tool call (the "output anomaly" rung of §4). Pure: it runs inside the
 * workflow sandbox; the effects live in `activities/tools/`.
 */
import { z } from 'zod';
import { normalizedError, type NormalizedError } from './errors';
import { once } from './lazy';
import type { LlmToolCall, ToolSpec } from './llm';

// Bounds keep the JSON Schema meaningful to the model (zod's default is Number.MAX_SAFE_INTEGER).
const MAX_READ_BYTES = 16 * 1024 * 1024;
const MAX_SHELL_TIMEOUT_MS = 10 * 60 * 1000;

// Objects are strict: a misspelt key (`file` for `path`) is reported as E_SCHEMA instead of silently ignored.
// Built on first use (core/lazy.ts): every task workflow evaluates this module, few check every tool.
const FsReadArgs = once(() =>
  z
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
    .strict(),
);

const FsWriteArgs = once(() =>
  z
    .object({
      path: z.string().describe('File to write; missing parent directories inside the workspace are created.'),
      content: z.string().describe('Text to write (UTF-8).'),
      append: z.boolean().optional().describe('Append instead of replacing the file.'),
    })
    .strict(),
);

const FsListArgs = once(() =>
  z
    .object({
      path: z.string().optional().describe('Directory to list; defaults to the first workspace root.'),
    })
    .strict(),
);

const ShellRunArgs = once(() =>
  z
    .object({
      command: z
        .string()
        .describe('Program to run; must be on the allow-list. No shell: no pipes, globs or redirects.'),
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
    .strict(),
);

const HttpGetArgs = once(() =>
  z
    .object({
      url: z.string().describe('http(s) URL whose host is on the allow-list.'),
    })
    .strict(),
);

/** A tool's definition, its schema built when first read. */
function tool<S extends z.ZodObject>(description: string, schema: () => S, summaryArg: string) {
  return {
    description,
    get schema(): S {
      return schema();
    },
    summaryArg,
  };
}

/**
 * Every tool: its description for the model, its argument schema, and the argument that names what
 * it acts on (shown in the activity's summary in the Web UI).
 */
export const TOOL_DEFINITIONS = {
  'fs.read': tool('Read a text file inside the workspace.', FsReadArgs, 'path'),
  'fs.write': tool('Write or append a text file inside the workspace.', FsWriteArgs, 'path'),
  'fs.list': tool('List a directory inside the workspace (name, type, size; sorted by name).', FsListArgs, 'path'),
  'shell.run': tool(
    'Run an allow-listed command inside the workspace; returns exitCode, stdout and stderr.',
    ShellRunArgs,
    'command',
  ),
  'http.get': tool('HTTP GET a URL on an allow-listed host; returns status and body.', HttpGetArgs, 'url'),
} as const satisfies Record<string, { description: string; schema: z.ZodObject; summaryArg: string }>;

export type ToolName = keyof typeof TOOL_DEFINITIONS;

/** Parsed arguments of each tool. */
export type ToolArgs = { [N in ToolName]: z.output<(typeof TOOL_DEFINITIONS)[N]['schema']> };

/** The names of the built-in tools, in declaration order. */
export const TOOL_NAMES = Object.keys(TOOL_DEFINITIONS) as ToolName[];

/** True when `name` is a built-in tool. */
export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(TOOL_DEFINITIONS, name);
}

/**
 * What a tool's name may be: a letter, then letters, digits, `_` and `-`, with dot-separated parts
 * (`fs.read`, `weather.forecast`, an MCP server's `github.search_issues`); at most 64 characters, what
 * every provider accepts as a function name once dots are mapped.
 */
export const TOOL_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$/;
export const MAX_TOOL_NAME_CHARS = 64;

/** True when `name` is a well-formed tool name. */
export function isValidToolName(name: string): boolean {
  return name.length <= MAX_TOOL_NAME_CHARS && TOOL_NAME_PATTERN.test(name);
}

/**
 * True when an allow-list entry offers `name`: the same name, or `prefix.*` for every tool under a
 * prefix (an MCP server's tools: `github.*`).
 *
 * ```ts
 * allowMatches('github.*', 'github.search') // true
 * ```
 */
export function allowMatches(entry: string, name: string): boolean {
  return entry.endsWith('.*') ? name.startsWith(entry.slice(0, -1)) : entry === name;
}

/** The JSON Schema of a zod input schema, as sent to the model (no `$schema` key). */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  return parameters;
}

function parametersOf(name: ToolName): Record<string, unknown> {
  return jsonSchemaOf(TOOL_DEFINITIONS[name].schema);
}

/**
 * The built-in tools an agent is offered: those its config's `tools.allow` names (in declaration
 * order), or every one.
 *
 * ```ts
 * offeredTools(['fs.list', 'fs.read']) // ['fs.read', 'fs.list']
 * ```
 */
export function offeredTools(allow?: readonly string[]): ToolName[] {
  return allow ? TOOL_NAMES.filter((name) => allow.some((entry) => allowMatches(entry, name))) : TOOL_NAMES;
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
  return offeredTools(allow).map((name) => ({
    name,
    description: TOOL_DEFINITIONS[name].description,
    parameters: parametersOf(name),
  }));
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
  const fields = (args ?? {}) as Record<string, unknown>;
  // A tool that is not built in is summarized by its first string argument.
  const target = isToolName(name)
    ? fields[TOOL_DEFINITIONS[name].summaryArg]
    : Object.values(fields).find((v) => typeof v === 'string');
  return `tool ${name} ${typeof target === 'string' ? target.slice(0, SUMMARY_CHARS) : ''}`.trim();
}

/**
 * A compact signature such as `fs.read({ path: string, maxBytes?: integer })`, for suggestions: of a
 * built-in tool, or of any tool given its JSON Schema parameters.
 */
export function toolSignature(
  name: string,
  parameters: Record<string, unknown> = isToolName(name) ? parametersOf(name) : {},
): string {
  type Prop = { type?: unknown; items?: { type?: unknown } };
  const schema = parameters as { properties?: Record<string, Prop>; required?: string[] };
  const required = new Set(schema.required ?? []);
  const params = Object.entries(schema.properties ?? {}).map(([key, prop]) => {
    const type = prop.type === 'array' ? `${String(prop.items?.type ?? 'unknown')}[]` : String(prop.type ?? 'unknown');
    return `${key}${required.has(key) ? '' : '?'}: ${type}`;
  });
  return `${name}({ ${params.join(', ')} })`;
}

/**
 * Check arguments against a tool's zod schema: the parsed value, or E_SCHEMA naming every issue and
 * the expected parameters. A call without arguments is checked as `{}`, so the schema names what is missing.
 *
 * ```ts
 * checkArgs('fs.read', TOOL_DEFINITIONS['fs.read'].schema, { file: 'a' }) // { ok: false, error: { code: 'E_SCHEMA', ... } }
 * ```
 */
export function checkArgs(name: string, schema: z.ZodType, args: unknown): ToolCallValidation {
  const parsed = schema.safeParse(args ?? {});
  if (parsed.success) return { ok: true, args: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`);
  return {
    ok: false,
    error: normalizedError({
      code: 'E_SCHEMA',
      kind: 'execution',
      source: name,
      message: `Invalid arguments for ${name}: ${issues.join('; ')}`,
      suggestion: `Expected parameters: ${toolSignature(name, jsonSchemaOf(schema))}.`,
    }),
  };
}

/** Outcome of `validateToolCall`: parsed arguments, or the normalized error that replaces execution. */
export type ToolCallValidation = { ok: true; args: unknown } | { ok: false; error: NormalizedError };

const EXCERPT_CHARS = 80;

function excerpt(text: string): string {
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

/**
 * Check a model's tool call before anything runs: arguments that are not JSON (E_INVALID_JSON), a tool
 * the agent is not offered (E_UNKNOWN_TOOL), arguments that do not match a built-in tool's schema or
 * are not an object (E_SCHEMA). All are execution errors whose source is the tool name; when
 * `rawArguments` parses, its value is used. `offered` names the agent's tools (default: the built-in
 * ones); a tool that is not built in is checked against its own schema by the tool activity, where it is.
 *
 * ```ts
 * const checked = validateToolCall({ id: 'c1', name: 'fs.read', args: { path: 'notes.md' } });
 * if (!checked.ok) return failure(checked.error);
 * ```
 */
export function validateToolCall(call: LlmToolCall, offered: readonly string[] = TOOL_NAMES): ToolCallValidation {
  const fail = (
    code: 'E_INVALID_JSON' | 'E_UNKNOWN_TOOL' | 'E_SCHEMA',
    message: string,
    suggestion: string,
  ): ToolCallValidation => ({
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

  if (!offered.includes(call.name)) {
    // A built-in tool the agent's config leaves out is unknown to this agent, whatever the worker has.
    return isToolName(call.name)
      ? fail(
          'E_UNKNOWN_TOOL',
          `Tool '${call.name}' is not offered to this agent.`,
          `Tools you can call: ${offered.join(', ')}.`,
        )
      : fail('E_UNKNOWN_TOOL', `Unknown tool '${call.name}'.`, `Known tools: ${offered.join(', ')}.`);
  }
  // Another tool's own schema is checked by the tool activity, where it is; here only that it takes an object.
  return isToolName(call.name)
    ? checkArgs(call.name, TOOL_DEFINITIONS[call.name].schema, raw)
    : checkObjectArgs(call.name, raw);
}

/**
 * What every tool takes, whatever its schema: one object of arguments (absent counts as `{}`), else
 * E_SCHEMA. For tools whose schema is not at hand (an MCP server's, a worker's own in the workflow).
 */
export function checkObjectArgs(name: string, args: unknown): ToolCallValidation {
  const value = args ?? {};
  if (typeof value === 'object' && !Array.isArray(value)) return { ok: true, args: value };
  return {
    ok: false,
    error: normalizedError({
      code: 'E_SCHEMA',
      kind: 'execution',
      source: name,
      message: `Invalid arguments for ${name}: (root): expected an object`,
      suggestion: 'Send the arguments as one JSON object.',
    }),
  };
}
