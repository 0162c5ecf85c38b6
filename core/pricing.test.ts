import { parseAgentConfig } from './config';
import { ConfigError } from './errors';
import { parseLlmSpec } from './llm-spec';
import {
  costUsd,
  lowerPriceRefusal,
  outputTokensFor,
  parsePricing,
  priceFor,
  pricingKeys,
  unpricedRefusal,
  type Price,
} from './pricing';

const price: Price = { inputPerMTok: 2.5, cachedInputPerMTok: 1.25, outputPerMTok: 10 };

describe('costUsd', () => {
  it('prices the uncached input, the cached input and the output each at its own rate', () => {
    // 600 × 2.5 + 400 × 1.25 + 100 × 10 = 3000 micro-dollars
    expect(costUsd({ inputTokens: 1000, cachedInputTokens: 400, outputTokens: 100 }, price)).toBe(0.003);
  });

  it('prices all the input at the input rate when the provider reported no cached tokens', () => {
    expect(costUsd({ inputTokens: 1000, outputTokens: 100 }, price)).toBe(0.0035);
  });

  it('adds up to exact figures over many calls (rounded to a billionth of a dollar)', () => {
    let total = 0;
    for (let i = 0; i < 1000; i++)
      total = Math.round((total + costUsd({ inputTokens: 7, outputTokens: 3 }, price)) * 1e9) / 1e9;
    expect(total).toBe(0.0475);
  });
});

describe('outputTokensFor', () => {
  it('says how many output tokens the dollars left buy, whole ones only', () => {
    expect(outputTokensFor(0.001, price)).toBe(100);
    expect(outputTokensFor(0.0000099, price)).toBe(0);
    expect(outputTokensFor(1, { ...price, outputPerMTok: 0 })).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('price lookup', () => {
  it('finds a model under its whole spec first, then under <provider>:<model>', () => {
    const llm = { provider: 'openai' as const, model: 'gpt-4o-mini', baseUrl: 'http://h/v1' };
    expect(pricingKeys(llm)).toEqual(['openai:gpt-4o-mini@http://h/v1', 'openai:gpt-4o-mini']);
    const cheap = { ...price, inputPerMTok: 0.1 };
    expect(priceFor({ 'openai:gpt-4o-mini': price }, llm)).toBe(price);
    expect(priceFor({ 'openai:gpt-4o-mini': price, 'openai:gpt-4o-mini@http://h/v1': cheap }, llm)).toBe(cheap);
    expect(pricingKeys({ provider: 'local', modelPath: '/m/qwen.gguf' })).toEqual([
      'local:/m/qwen.gguf',
      'local:qwen.gguf',
    ]);
    expect(priceFor({ 'gemini:other': price }, { provider: 'gemini', model: 'gemini-2.5-flash' })).toBeUndefined();
  });

  it('refuses a cost budget on an unpriced model, naming it and the prices the worker has', () => {
    const llm = { provider: 'gemini' as const, model: 'gemini-2.5-pro' };
    const refusal = unpricedRefusal(llm, undefined, { 'gemini:gemini-2.5-flash': price });
    expect(refusal).toContain('no price for gemini:gemini-2.5-pro');
    expect(refusal).toContain('this worker has prices for gemini:gemini-2.5-flash');
    expect(unpricedRefusal(llm, undefined, undefined)).toContain('this worker has no price table');
    expect(unpricedRefusal(llm, { 'gemini:gemini-2.5-pro': price }, undefined)).toBeUndefined();
  });
});

describe('bad price tables', () => {
  const refusal = (raw: unknown): string => {
    try {
      parsePricing(raw, 'STARRY_PRICING');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('accepted');
  };

  it('names a negative price and the entry that has it', () => {
    expect(refusal({ 'openai:gpt-4o': { inputPerMTok: -1, cachedInputPerMTok: 1, outputPerMTok: 10 } })).toContain(
      'openai:gpt-4o.inputPerMTok: must be >= 0 (USD per million tokens)',
    );
  });

  it('names a missing price: all three are required, none defaults', () => {
    const message = refusal({ 'openai:gpt-4o': { inputPerMTok: 1, outputPerMTok: 10 } });
    expect(message).toContain('openai:gpt-4o.cachedInputPerMTok: missing: give all three prices');
  });

  it('names a key that is not <provider>:<model>, and an unknown field', () => {
    expect(refusal({ 'gpt-4o': price })).toContain('a price is keyed by "<provider>:<model>"');
    expect(refusal({ 'openai:gpt-4o': { ...price, perRequest: 1 } })).toContain('perRequest');
  });

  it('refuses the same in an agent config, under pricing', () => {
    expect(() =>
      parseAgentConfig(
        { pricing: { 'openai:gpt-4o': { inputPerMTok: 1, cachedInputPerMTok: -2, outputPerMTok: 3 } } },
        'scripted:x',
      ),
    ).toThrow(/pricing\.openai:gpt-4o\.cachedInputPerMTok: must be >= 0/);
    expect(() => parseAgentConfig({ safety: { costBudgetUsd: 0 } }, 'scripted:x')).toThrow(
      /safety\.costBudgetUsd: must be > 0/,
    );
  });
});

describe("a config's own prices against the worker's", () => {
  const llm = parseLlmSpec('openai:gpt-4o');
  const p = (inputPerMTok: number, cachedInputPerMTok: number, outputPerMTok: number) => ({
    inputPerMTok,
    cachedInputPerMTok,
    outputPerMTok,
  });
  const worker = { 'openai:gpt-4o': p(2.5, 1.25, 10) };

  it('refuses a price below the worker’s for the task’s model, naming each lower price and what helps', () => {
    const why = lowerPriceRefusal(llm, { 'openai:gpt-4o': p(0, 0, 0) }, worker);
    expect(why).toMatch(/^pricing: the config prices openai:gpt-4o below the worker's STARRY_PRICING/);
    expect(why).toMatch(/inputPerMTok 0 < 2\.5, cachedInputPerMTok 0 < 1\.25, outputPerMTok 0 < 10/);
    expect(why).toMatch(/Leave openai:gpt-4o out of the config's pricing to use the worker's price/);
    expect(lowerPriceRefusal(llm, { 'openai:gpt-4o': p(2.5, 1.25, 9.99) }, worker)).toMatch(/outputPerMTok 9\.99 < 10/);
  });

  it('allows the same or a higher price, a model the worker does not price, and other models’ entries', () => {
    expect(lowerPriceRefusal(llm, { 'openai:gpt-4o': p(2.5, 1.25, 10) }, worker)).toBeUndefined();
    expect(lowerPriceRefusal(llm, { 'openai:gpt-4o': p(5, 2.5, 20) }, worker)).toBeUndefined();
    expect(lowerPriceRefusal(llm, { 'openai:gpt-4o': p(0, 0, 0) }, undefined)).toBeUndefined();
    expect(lowerPriceRefusal(llm, { 'openai:other': p(0, 0, 0) }, worker)).toBeUndefined();
  });
});
