/**
 * Values built on their first use. Every new workflow evaluates our modules afresh (the SDK keeps
 * workflows that share a V8 context apart), so a schema built at module evaluation costs every agent and
 * task that loads its module, needed or not (docs/BENCHMARKS.md): the workflow path builds its schemas
 * with `once`.
 */

/**
 * A value built on its first use and kept.
 *
 * ```ts
 * const schema = once(() => z.object({ a: z.string() }));
 * schema().parse({ a: 'x' });
 * ```
 */
export function once<T>(build: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= build());
}
