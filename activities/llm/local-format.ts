/**
 * The pure half of the local model provider (`local:PATH.gguf`): the JSON Schema that constrains each
 * turn to one tool call or one final answer, the chat history the model reads, and the turn back into an
 * `LlmResponse`. No Node, no node-llama-cpp: the process that runs the model gets plain data from here.
 *
 * A small model cannot be trusted to follow a tool-calling format, so it is not asked to: its output is
 * sampled under a grammar built from this schema, and the grammar only admits what the tool registry's
 * own schemas accept. Constraints a grammar cannot express (numeric ranges, patterns) are left out of
 * the grammar: an optional argument carrying one is simply not offered to the model.
 */
import type { ChatMessage, LlmResponse, LlmToolCall, ToolSpec } from '../../core/llm';

/** A JSON Schema in the subset node-llama-cpp's grammar builder understands (`GbnfJsonSchema`). */
export type AnswerSchema = Record<string, unknown>;

/** One chat item in node-llama-cpp's `ChatHistoryItem` shape (plain data, sent to the model process). */
export type LocalChatItem =
  { type: 'system'; text: string } | { type: 'user'; text: string } | { type: 'model'; response: string[] };

/** Limits of one turn's answer. Every string the grammar admits has a `maxLength`. */
export interface AnswerBounds {
  /** The call's token cap (already capped by the budget): the longest admissible answer must fit in it. */
  maxOutputTokens: number;
  /** Longest argument string, in characters. */
  maxStringChars?: number;
  /** Longest string inside an array argument (e.g. `shell.run` args). */
  maxItemChars?: number;
  /** Most elements of an array argument. */
  maxArrayItems?: number;
  /** Longest final answer. */
  maxAnswerChars?: number;
}

export const DEFAULT_BOUNDS = { maxStringChars: 256, maxItemChars: 64, maxArrayItems: 6, maxAnswerChars: 512 } as const;

// A tool with more optional arguments than this offers only the first ones: the variants double with each.
const MAX_OPTIONAL_ARGS = 3;
// Worst case of the grammar's text per character of a string: a `\uXXXX` escape is six bytes, and a
// token is at least one byte, so six tokens. Fitting by this bound means the cap can never cut the JSON.
const TOKENS_PER_CHAR = 6;
// Whitespace the grammar allows around one key or item: a comma, a newline and up to four spaces per
// nesting level (answers nest three deep), and a space after the colon.
const WHITESPACE_PER_KEY = 20;
const TRAILER_TOKENS = 8;

type Json = Record<string, unknown>;
type Sized = { maxStringChars: number; maxItemChars: number; maxArrayItems: number; maxAnswerChars: number };

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const NUMERIC_LIMITS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];

/** The grammar form of one argument's schema, or undefined when a grammar cannot enforce all of it. */
function valueSchema(schema: unknown, sized: Sized, inArray = false): AnswerSchema | undefined {
  if (!isObject(schema)) return undefined;
  if ('const' in schema) return { const: schema.const };
  if (Array.isArray(schema.enum)) return { enum: schema.enum };
  switch (schema.type) {
    case 'string': {
      if (schema.pattern !== undefined || schema.format !== undefined) return undefined;
      const cap = inArray ? sized.maxItemChars : sized.maxStringChars;
      const maxLength = Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : cap, cap);
      const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
      if (minLength > maxLength) return undefined;
      return minLength > 0 ? { type: 'string', minLength, maxLength } : { type: 'string', maxLength };
    }
    case 'boolean':
    case 'null':
      return { type: schema.type };
    case 'integer':
    case 'number':
      // A grammar cannot say "positive" or "at most 16 MiB": a bounded number is not offered.
      return NUMERIC_LIMITS.some((k) => k in schema) ? undefined : { type: schema.type };
    case 'array': {
      if (schema.uniqueItems === true || !isObject(schema.items)) return undefined;
      const items = valueSchema(schema.items, sized, true);
      if (!items) return undefined;
      const maxItems = Math.min(
        typeof schema.maxItems === 'number' ? schema.maxItems : sized.maxArrayItems,
        sized.maxArrayItems,
      );
      const minItems = typeof schema.minItems === 'number' ? schema.minItems : 0;
      if (minItems > maxItems) return undefined;
      return { type: 'array', items, maxItems, ...(minItems > 0 ? { minItems } : {}) };
    }
    case 'object': {
      const variants = objectVariants(schema, sized);
      return variants && variants.length === 1 ? variants[0] : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * An object schema as grammar variants. node-llama-cpp's grammar makes every listed property required,
 * so each combination of optional properties is its own variant (properties keep the schema's order).
 */
function objectVariants(schema: Json, sized: Sized): AnswerSchema[] | undefined {
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const entries: Array<{ key: string; value: AnswerSchema; required: boolean }> = [];
  for (const [key, prop] of Object.entries(properties)) {
    const value = valueSchema(prop, sized);
    if (value) entries.push({ key, value, required: required.has(key) });
    else if (required.has(key)) return undefined; // a required argument the grammar cannot guarantee
  }
  const optional = entries.filter((e) => !e.required).slice(0, MAX_OPTIONAL_ARGS);
  const variants: AnswerSchema[] = [];
  for (let mask = 0; mask < 1 << optional.length; mask++) {
    const chosen = new Set(optional.filter((_, i) => mask & (1 << i)).map((e) => e.key));
    const props: Json = {};
    for (const e of entries) if (e.required || chosen.has(e.key)) props[e.key] = e.value;
    variants.push({ type: 'object', properties: props });
  }
  return variants;
}

/** The most tokens an answer admitted by `schema` can take (see TOKENS_PER_CHAR). */
export function worstCaseTokens(schema: AnswerSchema): number {
  if ('const' in schema) return JSON.stringify(schema.const).length;
  if (Array.isArray(schema.enum)) return Math.max(...schema.enum.map((v) => JSON.stringify(v).length));
  if (Array.isArray(schema.oneOf)) return Math.max(...(schema.oneOf as AnswerSchema[]).map(worstCaseTokens));
  switch (schema.type) {
    case 'string':
      return 2 + TOKENS_PER_CHAR * (schema.maxLength as number);
    case 'boolean':
      return 5;
    case 'null':
      return 4;
    case 'integer':
    case 'number':
      return 24;
    case 'array':
      return 2 + (schema.maxItems as number) * (worstCaseTokens(schema.items as AnswerSchema) + WHITESPACE_PER_KEY);
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, AnswerSchema>;
      return Object.entries(props).reduce(
        (n, [key, value]) => n + key.length + 3 + WHITESPACE_PER_KEY + worstCaseTokens(value),
        2 + WHITESPACE_PER_KEY,
      );
    }
    default:
      return 0;
  }
}

function answerSchemaSized(tools: ToolSpec[], sized: Sized): AnswerSchema {
  const alternatives: AnswerSchema[] = [];
  for (const tool of tools) {
    const variants = objectVariants(isObject(tool.parameters) ? tool.parameters : {}, sized);
    if (!variants) continue;
    const args = variants.length === 1 ? variants[0] : { oneOf: variants };
    alternatives.push({ type: 'object', properties: { tool: { const: tool.name }, arguments: args } });
  }
  alternatives.push({
    type: 'object',
    properties: { final_answer: { type: 'string', maxLength: sized.maxAnswerChars } },
  });
  return { oneOf: alternatives };
}

/**
 * The JSON Schema of one turn: `{tool, arguments}` for each tool in `tools`, or `{final_answer}`. Every
 * string is bounded; when the token cap is small the bounds shrink until the longest admissible answer
 * fits in it, so the cap does not cut an answer in half (below ~30 tokens nothing fits and a cut stays
 * possible; `parseLocalAnswer` reports it).
 *
 * ```ts
 * const schema = localAnswerSchema(toolSpecs(), { maxOutputTokens: 4096 });
 * // { oneOf: [ { type: 'object', properties: { tool: { const: 'fs.read' }, arguments: { ... } } }, ..., { ... final_answer ... } ] }
 * ```
 */
export function localAnswerSchema(tools: ToolSpec[], bounds: AnswerBounds): AnswerSchema {
  const full: Sized = {
    maxStringChars: bounds.maxStringChars ?? DEFAULT_BOUNDS.maxStringChars,
    maxItemChars: bounds.maxItemChars ?? DEFAULT_BOUNDS.maxItemChars,
    maxArrayItems: bounds.maxArrayItems ?? DEFAULT_BOUNDS.maxArrayItems,
    maxAnswerChars: bounds.maxAnswerChars ?? DEFAULT_BOUNDS.maxAnswerChars,
  };
  const room = bounds.maxOutputTokens - TRAILER_TOKENS;
  // Halve every bound until the schema fits; at zero only the shortest answers remain.
  for (let scale = 1; ; scale /= 2) {
    const sized: Sized = {
      maxStringChars: Math.floor(full.maxStringChars * scale),
      maxItemChars: Math.floor(full.maxItemChars * scale),
      maxArrayItems: Math.floor(full.maxArrayItems * scale),
      maxAnswerChars: Math.floor(full.maxAnswerChars * scale),
    };
    const schema = answerSchemaSized(tools, sized);
    if (worstCaseTokens(schema) <= room) return schema;
    if (Object.values(sized).every((v) => v === 0)) {
      // Even empty strings do not fit: offer only what does, and always the final answer.
      const alternatives = (schema.oneOf as AnswerSchema[]).filter(
        (alt, i, all) => i === all.length - 1 || worstCaseTokens(alt) <= room,
      );
      return { oneOf: alternatives };
    }
  }
}

/** The arguments the grammar offers for a tool, as `path: string, append?: boolean`. */
function argumentList(tool: ToolSpec): string {
  const schema = isObject(tool.parameters) ? tool.parameters : {};
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const sized: Sized = { ...DEFAULT_BOUNDS };
  const offered = objectVariants(schema, sized);
  const keys = new Set(offered?.flatMap((v) => Object.keys((v.properties ?? {}) as Json)) ?? []);
  return Object.entries(properties)
    .filter(([key]) => keys.has(key))
    .map(([key, prop]) => {
      const p = isObject(prop) ? prop : {};
      const type = p.type === 'array' && isObject(p.items) ? `${String(p.items.type)}[]` : String(p.type ?? 'value');
      return `${key}${required.has(key) ? '' : '?'}: ${type}`;
    })
    .join(', ');
}

/**
 * What the model is told about answering, appended to the guide's system prompt: the two answer forms
 * and each tool with the arguments the grammar offers.
 *
 * ```ts
 * answerInstructions(toolSpecs()) // 'Answer every turn with exactly one JSON object …'
 * ```
 */
export function answerInstructions(tools: ToolSpec[]): string {
  return [
    'Answer every turn with exactly one JSON object and nothing else:',
    '- to call a tool: {"tool": "<tool name>", "arguments": {...}}',
    '- when the goal is done: {"final_answer": "<your answer>"}',
    'After a tool call you receive its result and answer again.',
    'Tools:',
    ...tools.map((t) => `- ${t.name}(${argumentList(t)}): ${t.description}`),
    // A worked example: small models copy the shape of an answer far better than they follow a description.
    'Example: to read the file notes.md, answer {"tool": "fs.read", "arguments": {"path": "notes.md"}}',
  ].join('\n');
}

/** The answer the model gave for an assistant turn, as the JSON it produced. */
function renderAssistant(m: Extract<ChatMessage, { role: 'assistant' }>): string {
  if (m.toolCalls?.length) {
    return m.toolCalls
      .map((c) => JSON.stringify({ tool: c.name, arguments: c.args !== undefined ? c.args : (c.rawArguments ?? {}) }))
      .join('\n');
  }
  return JSON.stringify({ final_answer: m.text ?? '' });
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}\n…[${text.length - max} more characters not shown]` : text;
}

/**
 * The conversation as node-llama-cpp chat history: the system prompt with the answer instructions, the
 * model's earlier turns as the JSON it produced, tool results as user turns (consecutive user turns
 * merged, long results clipped), and an open model turn to complete.
 *
 * ```ts
 * localChatHistory(messages, toolSpecs()) // [{ type: 'system', … }, { type: 'user', … }, …, { type: 'model', response: [] }]
 * ```
 */
export function localChatHistory(
  messages: ChatMessage[],
  tools: ToolSpec[],
  opts: { maxToolResultChars?: number } = {},
): LocalChatItem[] {
  const maxResult = opts.maxToolResultChars ?? 4000;
  const items: LocalChatItem[] = [];
  const systemTexts: string[] = [];
  const user = (text: string) => {
    const last = items.at(-1);
    if (last?.type === 'user') last.text = `${last.text}\n\n${text}`;
    else items.push({ type: 'user', text });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        systemTexts.push(m.text);
        break;
      case 'user':
        user(m.text);
        break;
      case 'assistant':
        items.push({ type: 'model', response: [renderAssistant(m)] });
        break;
      case 'tool':
        user(`Result of ${m.name}:\n${clip(m.text, maxResult)}`);
        break;
    }
  }
  const system = [...systemTexts, answerInstructions(tools)].join('\n\n');
  return [{ type: 'system', text: system }, ...items, { type: 'model', response: [] }];
}

/**
 * Turn the model's answer text into an LLM response: one tool call or a final text. The grammar makes
 * the text valid JSON; only a cut by the token cap leaves it incomplete, and then a started tool call is
 * returned with its raw text (the loop reports it as E_INVALID_JSON) and a started answer as the text so far.
 *
 * ```ts
 * parseLocalAnswer('{"tool": "fs.list", "arguments": {}}', { callNumber: 2 }) // { toolCalls: [{ id: 'local-2', name: 'fs.list', args: {} }] }
 * parseLocalAnswer('{"final_answer": "Done."}', { callNumber: 3 })            // { text: 'Done.', toolCalls: [] }
 * ```
 */
export function parseLocalAnswer(text: string, opts: { callNumber: number }): Pick<LlmResponse, 'text' | 'toolCalls'> {
  const id = `local-${opts.callNumber}`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return parseCutAnswer(text, id);
  }
  if (isObject(value) && typeof value.tool === 'string') {
    const call: LlmToolCall = { id, name: value.tool, args: value.arguments ?? {} };
    return { toolCalls: [call] };
  }
  if (isObject(value) && typeof value.final_answer === 'string') return { text: value.final_answer, toolCalls: [] };
  return { toolCalls: [{ id, name: 'unknown', rawArguments: text }] };
}

function parseCutAnswer(text: string, id: string): Pick<LlmResponse, 'text' | 'toolCalls'> {
  const answer = /^\s*\{\s*"final_answer"\s*:\s*"/.exec(text);
  if (answer) {
    const body = text.slice(answer[0].length).replace(/\\u[0-9a-fA-F]{0,3}$|\\$/, '');
    try {
      return { text: JSON.parse(`"${body}"`) as string, toolCalls: [] };
    } catch {
      return { text: body, toolCalls: [] };
    }
  }
  const tool = /"tool"\s*:\s*"([^"\\]*)"/.exec(text);
  const args = /"arguments"\s*:\s*/.exec(text);
  const raw = args ? text.slice(args.index + args[0].length) : text;
  return { toolCalls: [{ id, name: tool?.[1] ?? 'unknown', rawArguments: raw }] };
}
