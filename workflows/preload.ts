/**
 * Loaded once per workflow thread, before any workflow, and shared by every workflow on it (the
 * bundle's `preloadModules`, worker/bundle.ts): zod, the schema library under core/contract.ts and
 * core/config.ts. Without it every new workflow evaluated zod again: a third of the module
 * evaluation each new agent and task paid on the workflow thread (docs/BENCHMARKS.md).
 *
 * zod keeps no per-workflow state. Its one global, the config (default locale, memoizer), is filled by
 * its first parse, so one parse happens here: the SDK freezes what was preloaded, and a workflow's
 * first schema would otherwise try to write the frozen config. Our schemas stay per workflow (they
 * cache on themselves, so they cannot be frozen).
 */
import { z } from 'zod';

z.object({ preloaded: z.literal(true) }).parse({ preloaded: true });

export { z };
