/**
 * The tool API: a tool is a name, a description, a zod input schema (the JSON Schema the model sees is
 * generated from it) and an async function of the parsed input and a `ToolContext`. The built-in tools
 * are defined with it (`builtin.ts`), and so are a worker's own (`createWorker({ tools })`). Tools run
 * on the worker only: the workflow knows them by name and schema.
 */
import { z } from 'zod';
import { isValidToolName, jsonSchemaOf, MAX_TOOL_NAME_CHARS } from '../../core/tools';
import type { ToolSpec } from '../../core/llm';
import type { ToolContext } from './context';

const MAX_DESCRIPTION_CHARS = 1024;

/** A tool the worker can run. Make one with `defineTool`. */
export interface ToolDefinition<Input = unknown, Output = unknown> {
  readonly name: string;
  readonly description: string;
  /**
   * Checks (and may transform) the model's arguments before `run` sees them; its input side is what the model is told.
   */
  readonly input: z.ZodType<Input>;
  /**
   * Do the work. Return any JSON-serializable value (what the model reads, as JSON); throw to fail:
   * a `ToolError` says its code, kind and suggestion, anything else is classified (see `normalizeThrown`).
   */
  run(input: Input, ctx: ToolContext): Promise<Output> | Output;
}

/**
 * Define a tool. The input schema must be a zod object (every provider takes an object of arguments).
 *
 * ```ts
 * const forecast = defineTool({
 *   name: 'weather.forecast',
 *   description: 'The forecast for a city, today and the next days.',
 *   input: z.object({ city: z.string(), days: z.number().int().min(1).max(7).default(1) }),
 *   async run({ city, days }, { signal }) {
 *     const res = await fetch(`https://api.example.com/forecast?city=${encodeURIComponent(city)}&days=${days}`, { signal });
 *     if (res.status === 404) throw ToolError.of({ code: 'ENOENT', message: `no city named ${city}`, suggestion: 'Try the English name.' });
 *     return res.json();
 *   },
 * });
 * ```
 * @throws TypeError naming what is wrong with the definition.
 */
export function defineTool<S extends z.ZodObject, Output>(def: {
  name: string;
  description: string;
  input: S;
  run(input: z.output<S>, ctx: ToolContext): Promise<Output> | Output;
}): ToolDefinition<z.output<S>, Output> {
  const where = `defineTool(${JSON.stringify(def?.name)})`;
  if (typeof def?.name !== 'string' || !isValidToolName(def.name)) {
    throw new TypeError(
      `${where}: the name must be a letter, then letters, digits, _ or -, in dot-separated parts (e.g. weather.forecast), at most ${MAX_TOOL_NAME_CHARS} characters`,
    );
  }
  if (
    typeof def.description !== 'string' ||
    !def.description.trim() ||
    def.description.length > MAX_DESCRIPTION_CHARS
  ) {
    throw new TypeError(
      `${where}: the description must be 1 to ${MAX_DESCRIPTION_CHARS} characters: it is how the model learns what the tool does`,
    );
  }
  if (!(def.input instanceof z.ZodObject)) {
    throw new TypeError(`${where}: input must be a zod object schema (z.object({...})) from zod 4`);
  }
  if (typeof def.run !== 'function') throw new TypeError(`${where}: run must be a function`);
  return Object.freeze({
    name: def.name,
    description: def.description,
    input: def.input as unknown as z.ZodType<z.output<S>>,
    run: def.run,
  });
}

/** The tool as declared to the model: its name, description and JSON Schema parameters. */
export function specOf(tool: ToolDefinition): ToolSpec {
  return { name: tool.name, description: tool.description, parameters: jsonSchemaOf(tool.input) };
}
