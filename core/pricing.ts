/**
 * What LLM calls cost (docs/ARCHITECTURE.md#cost): a price table in US dollars per million tokens, keyed
 * by `<provider>:<model>`, on the worker (`STARRY_PRICING`) and per agent (the config's `pricing`, whose
 * entry wins for its model); the cost of a call's usage; what a dollar amount buys. Pure: the task
 * workflow prices its calls with the price it learnt at its start, so a replay counts the same.
 */
import { z } from 'zod';
import { ConfigError } from './errors';
import { once } from './lazy';
import type { TokenUsage } from './llm';
import type { LlmSpec } from './llm-spec';

/** Dollars per million tokens: a number >= 0, never left out (a missing price is bad input, not zero). */
const perMTok = () =>
  z
    .number({
      error: (i) =>
        i.input === undefined ? 'missing: give all three prices, in USD per million tokens' : 'must be a number',
    })
    .min(0, 'must be >= 0 (USD per million tokens)')
    .max(1_000_000, 'must be <= 1000000 (USD per million tokens)');

/**
 * One model's prices, in USD per million tokens. All three are required: a provider without a cached
 * rate is priced with `cachedInputPerMTok` equal to `inputPerMTok`, said explicitly.
 */
export const priceSchema = once(() =>
  z.object({ inputPerMTok: perMTok(), cachedInputPerMTok: perMTok(), outputPerMTok: perMTok() }).strict(),
);
export type Price = z.output<ReturnType<typeof priceSchema>>;

/** Entries a price table holds at most: it travels in configs (and so in histories). */
export const MAX_PRICES = 256;

/**
 * A price table: `"<provider>:<model>"` → prices, e.g. `{"openai:gpt-4o-mini": {"inputPerMTok": 0.15,
 * "cachedInputPerMTok": 0.075, "outputPerMTok": 0.6}}`.
 */
export const pricingSchema = once(() =>
  z
    .record(z.string(), priceSchema())
    .superRefine((table, ctx) => {
      for (const key of Object.keys(table).filter((k) => !/^[a-z]+:.{1,512}$/.test(k)))
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'a price is keyed by "<provider>:<model>", e.g. "openai:gpt-4o-mini"',
        });
    })
    .refine((t) => Object.keys(t).length <= MAX_PRICES, `at most ${MAX_PRICES} prices`),
);
export type PricingTable = z.output<ReturnType<typeof pricingSchema>>;

/**
 * Check a price table, naming each bad entry and what is wrong with it.
 *
 * ```ts
 * parsePricing({ 'openai:gpt-4o': { inputPerMTok: -1, cachedInputPerMTok: 1, outputPerMTok: 10 } }, 'STARRY_PRICING')
 * // throws ConfigError: Invalid STARRY_PRICING:\n  - openai:gpt-4o.inputPerMTok: must be >= 0 (USD per million tokens)
 * ```
 * @throws ConfigError naming every invalid entry.
 */
export function parsePricing(raw: unknown, origin: string): PricingTable {
  const parsed = pricingSchema().safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`);
  throw new ConfigError(
    `Invalid ${origin}:\n${issues.map((i) => `  - ${i}`).join('\n')}\nA price table is {"<provider>:<model>": {"inputPerMTok": N, "cachedInputPerMTok": N, "outputPerMTok": N}} in USD per million tokens.`,
    { issues },
  );
}

/**
 * The keys a model's price may be under, the most specific first: the whole spec as `--llm` names it
 * (`openai:qwen@http://host/v1`, `scripted:/path/turns.json`), then `<provider>:<model>` (for `local`
 * and `scripted`, the file's name).
 *
 * ```ts
 * pricingKeys({ provider: 'openai', model: 'gpt-4o-mini', baseUrl: 'http://h/v1' }) // ['openai:gpt-4o-mini@http://h/v1', 'openai:gpt-4o-mini']
 * ```
 */
export function pricingKeys(llm: LlmSpec): string[] {
  const model =
    llm.provider === 'local' ? baseName(llm.modelPath) : llm.provider === 'scripted' ? baseName(llm.file) : llm.model;
  const whole =
    llm.provider === 'local'
      ? `local:${llm.modelPath}`
      : llm.provider === 'scripted'
        ? `scripted:${llm.file}`
        : `${llm.provider}:${llm.model}${llm.provider === 'openai' && llm.baseUrl !== undefined ? `@${llm.baseUrl}` : ''}`;
  const short = `${llm.provider}:${model}`;
  return whole === short ? [short] : [whole, short];
}

const baseName = (file: string) => file.split(/[\\/]/).pop() ?? file;

/**
 * The price of `llm` in a table, or undefined.
 *
 * ```ts
 * priceFor({ 'gemini:gemini-2.5-flash': price }, { provider: 'gemini', model: 'gemini-2.5-flash' }) // price
 * ```
 */
export function priceFor(table: PricingTable | undefined, llm: LlmSpec): Price | undefined {
  if (!table) return undefined;
  for (const key of pricingKeys(llm)) if (Object.hasOwn(table, key)) return table[key];
  return undefined;
}

/** Dollars rounded to a billionth: sums of call costs stay exact enough to compare and to print. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e9) / 1e9;
}

/**
 * What one call's usage costs: the uncached input at the input price, the cached input at the cached
 * price, the output at the output price.
 *
 * ```ts
 * costUsd({ inputTokens: 1000, cachedInputTokens: 400, outputTokens: 100 }, { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 })
 * // 0.003 (600 × 2.5 + 400 × 1.25 + 100 × 10, per million)
 * ```
 */
export function costUsd(usage: TokenUsage, price: Price): number {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const micro =
    (usage.inputTokens - cached) * price.inputPerMTok +
    cached * price.cachedInputPerMTok +
    usage.outputTokens * price.outputPerMTok;
  return roundUsd(micro / 1e6);
}

/**
 * Output tokens `usd` buys at the output price (unbounded when output is free).
 *
 * ```ts
 * outputTokensFor(0.001, { inputPerMTok: 1, cachedInputPerMTok: 1, outputPerMTok: 10 }) // 100
 * ```
 */
export function outputTokensFor(usd: number, price: Price): number {
  if (price.outputPerMTok === 0) return Number.MAX_SAFE_INTEGER;
  // The epsilon keeps 0.001 / 10 × 1e6 at 100, not 99.99999.
  return Math.max(0, Math.floor((usd * 1e6) / price.outputPerMTok + 1e-9));
}

/**
 * Why a task with a cost budget cannot run on `llm`: no price for it in the agent's table nor in the
 * worker's, naming the model and the keys the worker has prices for; undefined when it has one.
 *
 * ```ts
 * unpricedRefusal({ provider: 'gemini', model: 'x' }, undefined, {}) // 'safety.costBudgetUsd is set but there is no price for gemini:x …'
 * ```
 */
export function unpricedRefusal(
  llm: LlmSpec,
  agent: PricingTable | undefined,
  worker: PricingTable | undefined,
): string | undefined {
  if (priceFor(agent, llm) ?? priceFor(worker, llm)) return undefined;
  const keys = Object.keys(worker ?? {});
  const known = keys.length ? `this worker has prices for ${keys.join(', ')}` : 'this worker has no price table';
  return `safety.costBudgetUsd is set but there is no price for ${pricingKeys(llm).join(' (or ')}${pricingKeys(llm).length > 1 ? ')' : ''}: ${known}. Add "pricing": {"${pricingKeys(llm).at(-1)}": {"inputPerMTok": N, "cachedInputPerMTok": N, "outputPerMTok": N}} to the agent's config, have the worker's operator add it to STARRY_PRICING, or leave costBudgetUsd out.`;
}

/** The three prices of an entry, as the refusal names them. */
const PRICE_FIELDS = ['inputPerMTok', 'cachedInputPerMTok', 'outputPerMTok'] as const;

/**
 * Why a config's own `pricing` is refused: it prices `llm` below what the worker's table
 * (`STARRY_PRICING`) says, which would let a task spend past a cost budget at a price of its choosing.
 * Prices are the operator's: a config may price a model the worker does not, or price one higher.
 *
 * ```ts
 * lowerPriceRefusal(llm, { 'openai:gpt': { inputPerMTok: 0, cachedInputPerMTok: 0, outputPerMTok: 0 } }, worker)
 * // "pricing: the config prices openai:gpt below the worker's STARRY_PRICING (inputPerMTok 0 < 2.5, …) …"
 * ```
 */
export function lowerPriceRefusal(
  llm: LlmSpec,
  agent: PricingTable | undefined,
  worker: PricingTable | undefined,
): string | undefined {
  const own = priceFor(agent, llm);
  const operator = priceFor(worker, llm);
  if (!own || !operator) return undefined;
  const lower = PRICE_FIELDS.filter((f) => own[f] < operator[f]).map((f) => `${f} ${own[f]} < ${operator[f]}`);
  if (!lower.length) return undefined;
  const key = pricingKeys(llm).find((k) => agent && Object.hasOwn(agent, k)) ?? pricingKeys(llm).at(-1);
  return `pricing: the config prices ${key} below the worker's STARRY_PRICING (${lower.join(', ')}); prices are the worker operator's, so a config may price a model the worker does not, or price one higher, never lower. Leave ${key} out of the config's pricing to use the worker's price.`;
}
