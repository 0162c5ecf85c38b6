/**
 * Reading Server-Sent Events the way a client does: `fetch`, then the body's bytes parsed by the
 * WHATWG rules (events end at a blank line; `event:`, `id:`, `data:` lines; `:` comments).
 */
export interface SseMessage {
  event: string;
  id?: string;
  data: Record<string, unknown>;
}

/** The events of a response body as they arrive; `comments` collects comment lines (keep-alives). */
export async function* sseEvents(
  body: ReadableStream<Uint8Array>,
  comments: string[] = [],
): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) comments.push(line.slice(1).trim());
        else if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('id: ')) id = line.slice(4);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length) yield { event, ...(id !== undefined ? { id } : {}), data: JSON.parse(data.join('\n')) };
    }
  }
}

/**
 * Open a stream and read it until `until` says so (or it ends): the events, and the response's status
 * and headers. Aborts the request when done, as a client that leaves does.
 */
export async function readStream(
  url: string,
  opts: {
    token?: string;
    lastEventId?: string;
    until?: (events: SseMessage[]) => boolean;
    /** Called once the response has started: what happens after it is news to the stream. */
    onOpen?: () => unknown;
    /** Called with each event as it arrives (e.g. to act on the task mid-stream). */
    onEvent?: (e: SseMessage, events: SseMessage[]) => unknown;
    comments?: string[];
  } = {},
): Promise<{ status: number; headers: Headers; events: SseMessage[]; problem?: Record<string, unknown> }> {
  const stop = new AbortController();
  const res = await fetch(url, {
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.lastEventId ? { 'last-event-id': opts.lastEventId } : {}),
    },
    signal: stop.signal,
  });
  if (!res.ok || !res.body)
    return {
      status: res.status,
      headers: res.headers,
      events: [],
      problem: (await res.json()) as Record<string, unknown>,
    };
  const events: SseMessage[] = [];
  await opts.onOpen?.();
  try {
    for await (const e of sseEvents(res.body, opts.comments)) {
      events.push(e);
      await opts.onEvent?.(e, events);
      if (opts.until?.(events)) break;
    }
  } finally {
    stop.abort();
  }
  return { status: res.status, headers: res.headers, events };
}
