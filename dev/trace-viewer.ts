/**
 * A trace viewer for a laptop (`starry dev --otel`): one HTTP server on loopback that is both an
 * OTLP/HTTP receiver (`POST /v1/traces`, protobuf, what the worker's exporter sends) and the pages a
 * person reads — `/` the recent traces, `/traces/<traceId>` a trace's waterfall, `/tasks/<workflowId>`
 * the latest trace of a task. Traces live in memory, bounded (dev/trace-store.ts); nothing is downloaded
 * and nothing but this process is needed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { listPage, missingPage, tracePage, type PageLimits } from './trace-pages';
import {
  decodeTraceRequest,
  summarize,
  TraceStore,
  type ReceivedSpan,
  type TraceStoreLimits,
  type TraceSummary,
} from './trace-store';

export type { ReceivedSpan } from './trace-store';

/** The default port: Jaeger's UI port, where people look for traces on a laptop. */
export const TRACE_VIEWER_PORT = 16686;

/** A request body larger than this is refused (the exporter sends at most 512 spans a request). */
const MAX_BODY = 32 * 1024 * 1024;

export interface TraceViewerOptions extends TraceStoreLimits {
  /** Default 16686; 0 takes a free port. */
  port?: number;
  /** Default 127.0.0.1: the viewer shows what the worker's tasks did, to this machine only. */
  host?: string;
  /** Called with each request's spans once they are stored (the test receiver keeps them all). */
  onSpans?: (spans: ReceivedSpan[]) => void;
  /**
   * The state of a task whose trace has no outcome yet (its spans arrive when they end, the task span
   * last), by its workflow id: e.g. `WAITING_FOR_APPROVAL`, so the pages show a task that waits for a
   * human as such instead of "running". `starry dev --otel` reads it from Temporal (the task's
   * `AgentState` search attribute); absent or failing, the pages say "running".
   */
  taskState?: (workflowId: string) => Promise<TaskState | undefined>;
}

/** A running task as Temporal has it: its state, and its agent (its spans name it only at the end). */
export interface TaskState {
  state: string;
  agentId?: string;
}

export interface TraceViewer {
  /** e.g. http://127.0.0.1:16686 — the exporter's endpoint is `${url}/v1/traces`. */
  url: string;
  store: TraceStore;
  /** The page of a trace. */
  traceUrl(traceId: string): string;
  close(): Promise<void>;
}

const TRACE_ID = /^[0-9a-f]{32}$/i;

/** A path segment decoded, or as it is when its escapes are malformed (`%E0`): never a thrown error. */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  // No script, no asset from elsewhere: the pages are HTML and inline CSS only.
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

/**
 * Start the viewer.
 *
 * ```ts
 * const viewer = await startTraceViewer({ port: 0 });
 * process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `${viewer.url}/v1/traces`;
 * // … run a task on a worker started now, then open viewer.url
 * ```
 *
 * @throws Error saying the port is in use (and how to pick another) when it is.
 */
export async function startTraceViewer(opts: TraceViewerOptions = {}): Promise<TraceViewer> {
  const store = new TraceStore(opts);
  const limits: PageLimits = { maxTraces: store.maxTraces, maxSpans: store.maxSpans, since: Date.now() };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://viewer');
    if (url.pathname === '/v1/traces') return receive(req, res, store, opts.onSpans);
    if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'GET a page, or POST /v1/traces\n');
    void withStates(store.summaries(), opts.taskState).then((states) => page(url, res, store, limits, states));
  });
  const port = opts.port ?? TRACE_VIEWER_PORT;
  const host = opts.host ?? '127.0.0.1';
  await listen(server, port, host);
  const url = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    url,
    store,
    traceUrl: (traceId) => `${url}/traces/${traceId}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // The exporter keeps its connection alive: close it too, or close() waits for its idle timeout.
        server.closeAllConnections();
      }),
  };
}

/** The states of the tasks whose traces have no outcome yet, by workflow id (none without a lookup). */
async function withStates(
  summaries: TraceSummary[],
  taskState: TraceViewerOptions['taskState'],
): Promise<Map<string, TaskState>> {
  const states = new Map<string, TaskState>();
  if (!taskState) return states;
  const running = [...new Set(summaries.filter((t) => !t.outcome && t.workflowId).map((t) => t.workflowId!))];
  await Promise.all(
    running.map(async (id) => {
      const state = await taskState(id).catch(() => undefined);
      if (state) states.set(id, state);
    }),
  );
  return states;
}

/** A page: `/` the recent traces, `/traces/<traceId>` one, `/tasks/<workflowId>` a task's latest. */
function page(
  url: URL,
  res: http.ServerResponse,
  store: TraceStore,
  limits: PageLimits,
  states: ReadonlyMap<string, TaskState>,
): void {
  const stated = (t: TraceSummary): TraceSummary => {
    const live = t.workflowId ? states.get(t.workflowId) : undefined;
    return live && !t.outcome ? { ...t, state: live.state, agentId: t.agentId ?? live.agentId } : t;
  };
  if (url.pathname === '/') return html(res, 200, listPage(store.summaries().map(stated), limits));
  const trace = /^\/traces\/([^/]+)$/.exec(url.pathname);
  if (trace) {
    const id = decoded(trace[1]!);
    if (!TRACE_ID.test(id))
      return text(res, 400, `not a trace id: a trace id is 32 hex digits (e.g. from \`starry status --json\`)\n`);
    const found = store.get(id);
    return found
      ? html(res, 200, tracePage(found, url.searchParams.get('open') === 'all', stated(summarize(found))))
      : html(res, 404, missingPage(id.toLowerCase(), limits));
  }
  const task = /^\/tasks\/([^/]+)$/.exec(url.pathname);
  if (task) {
    const found = store.forWorkflow(decoded(task[1]!));
    if (found) return void res.writeHead(302, { location: `/traces/${found.traceId}` }).end();
    return text(
      res,
      404,
      'no trace of that task here yet: its spans arrive when it ends; see / for the recent traces\n',
    );
  }
  return text(res, 404, 'not found: / lists the recent traces, /traces/<traceId> shows one\n');
}

/** `POST /v1/traces`: an OTLP/HTTP protobuf request (gzipped or not), its spans stored. */
function receive(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  store: TraceStore,
  onSpans: ((spans: ReceivedSpan[]) => void) | undefined,
) {
  if (req.method !== 'POST') return text(res, 405, 'POST OTLP/HTTP protobuf here\n');
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('application/x-protobuf'))
    return text(
      res,
      415,
      `this viewer reads OTLP/HTTP protobuf (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf); got content-type "${type}"\n`,
    );
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size <= MAX_BODY) chunks.push(c);
  });
  req.on('end', () => {
    if (size > MAX_BODY) return text(res, 413, `a request of at most ${MAX_BODY} bytes\n`);
    let spans: ReceivedSpan[];
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') {
      // Bounded unpacked too: a small gzip may unpack to gigabytes.
      try {
        body = zlib.gunzipSync(body, { maxOutputLength: MAX_BODY });
      } catch (err) {
        const big = (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
        return text(
          res,
          big ? 413 : 400,
          big ? `a request that unpacks to at most ${MAX_BODY} bytes\n` : `not gzip: ${(err as Error).message}\n`,
        );
      }
    }
    try {
      spans = decodeTraceRequest(body);
    } catch (err) {
      return text(res, 400, `not an OTLP ExportTraceServiceRequest: ${(err as Error).message}\n`);
    }
    store.add(spans);
    onSpans?.(spans);
    // An empty ExportTraceServiceResponse: everything was accepted.
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
}

/** Listen on `host:port`; a port in use is an error saying how to pick another. */
function listen(server: http.Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `port ${port} is in use (another \`starry dev --otel\`, or a Jaeger?): choose another with --otel-port N (0: any free port)`,
            )
          : err,
      ),
    );
    server.listen(port, host, resolve);
  });
}

function html(res: http.ServerResponse, status: number, body: string) {
  res.writeHead(status, HEADERS).end(body);
}

function text(res: http.ServerResponse, status: number, body: string) {
  res.writeHead(status, { ...HEADERS, 'content-type': 'text/plain; charset=utf-8' }).end(body);
}
