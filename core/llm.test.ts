import { usageProblem } from './llm';

describe('usageProblem', () => {
  it('accepts whole, non-negative counts', () => {
    expect(usageProblem({ inputTokens: 0, outputTokens: 12 })).toBeUndefined();
    expect(usageProblem({ inputTokens: 10, outputTokens: 12, cachedInputTokens: 10 })).toBeUndefined();
  });

  it.each([
    [{ inputTokens: 10.5, outputTokens: 3 }, 'inputTokens is 10.5, not a whole number >= 0'],
    [{ inputTokens: -1_000_000, outputTokens: 3 }, 'inputTokens is -1000000, not a whole number >= 0'],
    [{ inputTokens: 5, outputTokens: 'lots' }, 'outputTokens is "lots", not a whole number >= 0'],
    [{ inputTokens: 5 }, 'outputTokens is missing, not a whole number >= 0'],
    [{ inputTokens: Number.MAX_VALUE, outputTokens: 1 }, /inputTokens is 1\.79.*e\+308, not a whole number/],
    [{ inputTokens: 5, outputTokens: 1, cachedInputTokens: -1 }, 'cachedInputTokens is -1, not a whole number >= 0'],
    [{ inputTokens: 5, outputTokens: 1, cachedInputTokens: 6 }, 'cachedInputTokens is 6, more than inputTokens 5'],
  ])('names each bad count of %j', (usage, message) => {
    expect(usageProblem(usage)).toMatch(message);
  });
});
