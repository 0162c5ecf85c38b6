/**
 * The ids of the shipped guides, in the order help and error messages list them. Apart from the
 * registry (core/guides/index.ts) so that the config's schema can name them without importing the
 * guides, which read the config's type.
 *
 * ```ts
 * GUIDE_IDS.includes('pain') // true
 * ```
 */
export const GUIDE_IDS: readonly string[] = Object.freeze(['pain', 'safety', 'learning', 'debugging', 'neutral']);
