/**
 * Loaded once per workflow thread, before any workflow, and shared by every workflow on it (the
 * bundle's `preloadModules`, workers/bundle.ts): the libraries our workflow code uses, so a new agent or
 * task does not evaluate them again (docs/BENCHMARKS.md).
 * - zod, the schema library under core/contract.ts and core/config.ts. Without it every new workflow
 *   evaluated zod again: a third of the module evaluation each new agent and task paid.
 * - @noble/hashes' SHA-2, under core/fingerprint.ts: its module builds the SHA-512 round constants from
 *   BigInts, about 0.4 ms of every new task's workflow thread.
 *
 * The SDK deep-freezes what was preloaded, so a shared module must not write to its own objects later.
 * zod's one global, its config (default locale, memoizer), is filled by its first parse, so one parse
 * happens here. The hashes keep nothing between calls: each hash is a new object, and their scratch
 * buffers are typed arrays (which the SDK cannot freeze), rewritten at each block, within one
 * synchronous call. One hash happens here as well, so every lazy step of theirs is done before the
 * freeze. Our schemas stay per workflow (they cache on themselves, so they cannot be frozen).
 */
import { z } from 'zod';
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

z.object({ preloaded: z.literal(true) }).parse({ preloaded: true });
bytesToHex(sha256(utf8ToBytes('preloaded')));

export { z, sha256 };
