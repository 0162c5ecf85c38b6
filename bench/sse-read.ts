/** Reading a Server-Sent Events stream as the SSE benchmarks do (bench/sse.ts, bench/sse-fanout.ts). */
import { performance } from 'node:perf_hooks';

/** Wall-clock ms with sub-ms precision, comparable with the history's event times. */
export const nowMs = () => performance.timeOrigin + performance.now();

/** A stream's events (id and arrival) and the `error` event that ended it, if one did. */
export interface SseRead {
  got: { id: string; at: number }[];
  error?: string;
}

/** Read one stream to its `end` (or its `error`, or its close); `onBlock` sees each event's text. */
export async function readSse(url: string, onBlock?: (block: string) => void): Promise<SseRead> {
  const res = await fetch(url);
  if (!res.ok || !res.body) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const got: SseRead['got'] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const at = nowMs();
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: (.*)$/m.exec(block)?.[1];
      if (id) got.push({ id, at });
      onBlock?.(block);
      if (/^event: end$/m.test(block)) return { got };
      if (/^event: error$/m.test(block)) return { got, error: /^data: (.*)$/m.exec(block)?.[1] ?? '' };
    }
  }
  return { got, error: 'the stream closed before its end' };
}
