/**
 * The transcript in the content store, at message level: every message is a blob addressed by the
 * SHA-256 of its JSON (identical content is stored once), and each LLM call's context is a manifest
 * blob listing its messages, linked to the manifest it extended. The task workflow sends a delta of
 * references (`ContextDelta`) and gets references back, so its history grows with new content only;
 * the LLM activity resolves the delta here into the exact messages a provider sends.
 */
import {
  assistantMessage,
  isStored,
  type ChatMessage,
  type ContextDelta,
  type LlmCallInput,
  type LlmRequest,
  type LlmResponse,
  type StoredMessage,
  type StoredSummary,
  type SummaryCovers,
  type TokenUsage,
  type ToolSpec,
  type TranscriptEntry,
} from '../core/llm';
import { normalizedError } from '../core/errors';
import { activityTenant } from './tenant';
import { throwAsFailure } from './failures';
import { missingBlobMessage } from './store-mix';
import { BlobMissingError, inSpace, sha256Hex, type BlobStore } from './store';

/** One LLM call's context as stored: the anchored head, the window, and what this call added. */
export interface Manifest {
  v: 1;
  /** The blob of the tool specs sent. */
  tools: string;
  head: string[];
  /** The window after the head, the call's answer last. */
  rest: string[];
  /** The manifest this one extended (absent on a task's first call). */
  prev?: string;
  /** Messages new in this manifest (what the delta appended, then the answer), for the full transcript. */
  added: string[];
  /** The summary sent between the head and the window (`summarize` strategy): its message and its record. */
  summary?: { message: string; record: string };
}

/** A summary's record in the store: what it covers, what it replaced, what it cost. */
export interface SummaryRecord {
  v: 1;
  /** The blob of the summary message. */
  message: string;
  covers: SummaryCovers;
  /** The record of the earlier summary this one replaced (and summarized). */
  replaces?: string;
  usage: TokenUsage;
}

const json = (value: unknown) => JSON.stringify(value);

/** The blobs of one task's transcript: the store, in the space of the task's tenant. */
interface Blobs {
  get(ref: string): Promise<Buffer>;
  put(content: string): Promise<string>;
}

/**
 * Reads and writes transcripts in a blob store, in the space of the tenant whose task it is: a tenant's
 * blobs are keyed by its id (`tenants/<tenant>/` in the store), so no tenant reads another's by hash.
 * `space` says which: by default the tenant of the task the calling activity runs for; a reader outside
 * an activity (`starry logs --transcript`) gives the tenant of the workflow it reads.
 *
 * ```ts
 * const transcripts = transcriptStore(storeFromEnv());
 * const { request, answer } = await transcripts.resolve(input);
 * const response = await answer(await provider.generate(request));
 * ```
 */
export function transcriptStore(shared: BlobStore, space: () => string | undefined = activityTenant) {
  const store = tenantStore(shared, space);
  return {
    /**
     * The provider's request for an LLM activity input, and `answer`, which stores the model's answer
     * and the call's manifest and returns the response the workflow records (references, no provider parts).
     */
    resolve: (input: LlmCallInput) => resolve(store, input),
    /** Store a message; its entry for the workflow. */
    keep: (message: ChatMessage) => keep(store, message),
    /**
     * Store a summary: its message and its record (what it covers, what it replaced, its usage); the
     * summary as the workflow carries it.
     */
    keepSummary: (message: ChatMessage, facts: { covers: SummaryCovers; replaces?: string; usage: TokenUsage }) =>
      keepSummary(store, message, facts),
    /** The messages of some entries, in order (a stored one read back, an inline one as it is). */
    read: (entries: readonly TranscriptEntry[]) => read(store, entries),
    /**
     * Every message of a task's transcript up to and including the call whose manifest is `ref`, oldest
     * first, following the manifests back to the task's first call (across runs of the workflow).
     */
    transcript: (ref: string, tail: readonly TranscriptEntry[] = []) => transcript(store, ref, tail),
  };
}

/** The store of the current task's tenant, whichever it is at each call (one view per tenant, made once). */
function tenantStore(shared: BlobStore, space: () => string | undefined): Blobs {
  const spaces = new Map<string, BlobStore>();
  const current = (): BlobStore => {
    const tenant = space();
    if (tenant === undefined) return shared;
    let view = spaces.get(tenant);
    if (!view) spaces.set(tenant, (view = inSpace(shared, tenant)));
    return view;
  };
  return {
    get: (ref) => current().get(ref),
    put: (content) => current().put(content),
  };
}

async function readJson<T>(store: Blobs, ref: string): Promise<{ value: T; bytes: number }> {
  const bytes = await store.get(ref);
  return { value: JSON.parse(bytes.toString('utf8')) as T, bytes: bytes.length };
}

/** A message's blob: a stored entry is one already, an inline one is stored now. */
const refOf = (store: Blobs, m: TranscriptEntry): Promise<string> =>
  isStored(m) ? Promise.resolve(m.ref) : store.put(json(m));

/** A message's entry for the workflow, named by the hash its blob will have, and the blob's text. */
function entryOf(message: ChatMessage): { entry: StoredMessage; text: string } {
  const text = json(message);
  return { entry: { role: message.role, ref: sha256Hex(text), bytes: Buffer.byteLength(text) }, text };
}

async function keep(store: Blobs, message: ChatMessage): Promise<StoredMessage> {
  const { entry, text } = entryOf(message);
  await store.put(text);
  return entry;
}

async function resolve(
  store: Blobs,
  input: LlmCallInput,
): Promise<{ request: LlmRequest; answer(response: LlmResponse): Promise<LlmResponse> }> {
  const { context, messages, tools, ...rest } = input;
  if (!context) {
    // A whole context (a direct call): nothing to read from the store, the answer goes back whole.
    return { request: { ...rest, messages: messages ?? [], tools: tools ?? [] }, answer: async (r) => r };
  }
  const resolved = await manifestFor(store, context, tools);
  const summary = resolved.summary ? [resolved.summary.message] : [];
  const blobs = await Promise.all(
    [resolved.tools, ...resolved.head, ...summary, ...resolved.rest].map((ref) => readJson<unknown>(store, ref)),
  );
  const sentBytes = blobs.reduce((n, b) => n + b.bytes, 0);
  const [toolBlob, ...messageBlobs] = blobs;
  const request: LlmRequest = {
    ...rest,
    messages: messageBlobs.map((b) => b.value as ChatMessage),
    tools: toolBlob?.value as ToolSpec[],
  };
  return {
    request,
    async answer(response) {
      const { entry: message, text } = entryOf(assistantMessage(response));
      const manifest: Manifest = {
        ...resolved,
        rest: [...resolved.rest, message.ref],
        added: [...resolved.added, message.ref],
      };
      // Both blobs at once (each a durable write): the manifest names the answer by its hash, known
      // before it is written. The workflow learns of either only when both are stored.
      const [, ref] = await Promise.all([store.put(text), store.put(json(manifest))]);
      const { providerParts: _inStore, ...recorded } = response;
      return { ...recorded, message, context: { ref, sentBytes } };
    },
  };
}

/** The manifest of a delta's context (without the answer yet): its base's, less `drop`, plus `append`. */
async function manifestFor(store: Blobs, delta: ContextDelta, tools: ToolSpec[] | undefined): Promise<Manifest> {
  const appended = await Promise.all(delta.append.map((m) => refOf(store, m)));
  const summary = delta.summary
    ? { summary: { message: delta.summary.message.ref, record: delta.summary.record } }
    : {};
  if (delta.base) {
    const { value: base } = await readJson<Manifest>(store, delta.base);
    return {
      v: 1,
      tools: base.tools,
      head: base.head,
      rest: [...base.rest, ...appended].slice(delta.drop),
      prev: delta.base,
      added: appended,
      ...(base.summary ? { summary: base.summary } : {}),
      ...summary,
    };
  }
  const head = await Promise.all((delta.head ?? []).map((m) => refOf(store, m)));
  return {
    v: 1,
    tools: await store.put(json(tools ?? [])),
    head,
    rest: appended.slice(delta.drop),
    added: [...head, ...appended],
    ...summary,
  };
}

function read(store: Blobs, entries: readonly TranscriptEntry[]): Promise<ChatMessage[]> {
  return Promise.all(entries.map(async (m) => (isStored(m) ? (await readJson<ChatMessage>(store, m.ref)).value : m)));
}

async function keepSummary(
  store: Blobs,
  message: ChatMessage,
  facts: { covers: SummaryCovers; replaces?: string; usage: TokenUsage },
): Promise<StoredSummary> {
  const entry = await keep(store, message);
  const record: SummaryRecord = {
    v: 1,
    message: entry.ref,
    covers: facts.covers,
    ...(facts.replaces ? { replaces: facts.replaces } : {}),
    usage: facts.usage,
  };
  return { message: entry, record: await store.put(json(record)), covers: facts.covers };
}

async function transcript(store: Blobs, ref: string, tail: readonly TranscriptEntry[]): Promise<ChatMessage[]> {
  const chain: Manifest[] = [];
  for (let at: string | undefined = ref; at;) {
    const { value } = (await readJson<Manifest>(store, at)) as { value: Manifest };
    chain.push(value);
    at = value.prev;
  }
  const refs = chain.reverse().flatMap((m) => m.added);
  const messages = await Promise.all(refs.map(async (r) => (await readJson<ChatMessage>(store, r)).value));
  return [...messages, ...(await read(store, tail))];
}

export type TranscriptStore = ReturnType<typeof transcriptStore>;

/**
 * Run a step that reads or writes the store: a missing blob fails the call for good, naming the blob
 * (a human must restore it or point the worker at the right store); any other store failure is
 * transient, so the retry policy tries again.
 *
 * ```ts
 * const { request, answer } = await withStore(() => transcripts.resolve(input));
 * ```
 */
export async function withStore<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof BlobMissingError)
      throwAsFailure(
        normalizedError({
          code: 'E_BLOB_MISSING',
          kind: 'fatal',
          source: 'transcript store',
          message: await missingBlobMessage(err),
        }),
      );
    throwAsFailure(
      normalizedError({
        code: 'E_UNAVAILABLE',
        kind: 'transient',
        source: 'transcript store',
        message: `the transcript store failed: ${err instanceof Error ? err.message : String(err)}`,
      }),
    );
  }
}
