/**
 * The dev trace viewer's pages (dev/trace-viewer.ts): plain HTML and CSS written here, no script and no
 * asset from elsewhere. Every value that comes from a span is escaped; the server also forbids scripts
 * (Content-Security-Policy), so a span name cannot act on the reader's browser.
 */
import { rootsOf, summarize, type ReceivedSpan, type StoredTrace, type TraceSummary } from './trace-store';

/** Text for HTML content and attribute values. */
export function esc(v: unknown): string {
  return String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** 850 µs, 12.3 ms, 4.56 s, 2 min 5 s. */
export function duration(ms: number): string {
  if (ms === 0) return '0 ms';
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 1000) return `${ms < 100 ? ms.toFixed(1) : Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** A local date and time to the millisecond: 2026-11-26 21:03:04.123. */
function clock(ms: number): string {
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#fff}
header{padding:10px 20px;background:#1d2330;color:#fff}header a{color:#9cc3ff}
main{padding:12px 20px}h1{font-size:18px;margin:0}.muted{color:#667085}.waiting{color:#b54708;font-weight:600}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e4e7ec;vertical-align:top}
th{font-weight:600;color:#475467;font-size:12px}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.err{color:#b42318;font-weight:600}.ok{color:#067647}
.facts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:8px 0 12px}
.row{display:grid;grid-template-columns:minmax(300px,36%) 1fr 80px;align-items:center;gap:8px;padding:2px 0;border-bottom:1px solid #f2f4f7}
summary.row{cursor:pointer;list-style:none}summary.row::-webkit-details-marker{display:none}
details[open]>summary.row{background:#eef4ff}summary.row:hover{background:#f5f8ff}
.name{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}.name b{font-weight:600}
.track{position:relative;height:18px;background:repeating-linear-gradient(90deg,transparent 0 calc(25% - 1px),#eaecf0 calc(25% - 1px) 25%)}
.bar{position:absolute;top:3px;height:12px;min-width:2px;border-radius:2px;background:#4e80ee}
.k3 .bar,.bar.k3{background:#7a5af8}.bar.err{background:#d92d20}
.mark{position:absolute;top:0;width:0;height:0;border:6px solid transparent;border-top:9px solid #f79009;margin-left:-6px}
.mark.pain{border-top-color:#d92d20}
.chip{display:inline-block;margin-left:6px;padding:0 6px;border-radius:9px;font-size:11px;background:#fef0c7;color:#93370d}
.chip.pain{background:#fee4e2;color:#b42318}.chip.error{background:#d92d20;color:#fff}
.dur{text-align:right;font-variant-numeric:tabular-nums;color:#475467}
.axis{font-size:11px;color:#667085;border-bottom:1px solid #d0d5dd}.axis .track{background:none;height:16px}
.axis .track span{position:absolute;white-space:nowrap;transform:translateX(-50%)}.axis .track span:first-child{transform:none}
.axis .track span:last-child{transform:translateX(-100%)}
.info{margin:4px 0 10px;padding:8px 12px;background:#f9fafb;border-left:3px solid #4e80ee}
.info table{width:auto}.info td,.info th{border:0;padding:1px 10px 1px 0}.info h3{font-size:12px;margin:6px 0 2px;color:#475467}
`;

function page(title: string, body: string, extraHead = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${CSS}</style>${extraHead}</head>
<body><header><h1><a href="/">starry traces</a> · ${esc(title)}</h1></header><main>${body}</main></body></html>
`;
}

const WAITING = 'WAITING_FOR_APPROVAL';

/**
 * A trace's outcome as the pages say it: the task's outcome once it ended; before, what it does as
 * Temporal has it, a task that waits for a human named as such (its spans show nothing of the wait:
 * the task span, which carries the approval events, arrives when the task ends).
 *
 * ```ts
 * outcomeText({ state: 'WAITING_FOR_APPROVAL', agentId: 'a1' }) // 'waiting for a human: `starry approvals a1`'
 * ```
 */
export function outcomeText(t: Pick<TraceSummary, 'outcome' | 'state' | 'agentId'>): string {
  if (t.outcome) return t.outcome;
  if (t.state === WAITING) return `waiting for a human: \`starry approvals${t.agentId ? ` ${t.agentId}` : ''}\``;
  return t.state ? `running (${t.state})` : 'running';
}

/** What the pages say about the store's bounds. */
export interface PageLimits {
  maxTraces: number;
  maxSpans: number;
  since: number;
}

/** The list of recent traces, the most recent first. */
export function listPage(traces: TraceSummary[], limits: PageLimits): string {
  const rows = traces.map(
    (t) => `<tr>
<td class="mono">${esc(clock(t.start))}</td>
<td><a href="/traces/${esc(t.traceId)}">${esc(t.rootName)}</a><br><span class="mono muted">${esc(t.traceId)}</span></td>
<td>${esc(t.agentId ?? '')}</td><td>${esc(t.taskId ?? '')}</td>
<td>${t.outcome ? esc(t.outcome) : `<span class="${t.state === WAITING ? 'waiting' : 'muted'}">${esc(outcomeText(t))}</span>`}</td>
<td class="num">${esc(duration(t.durationMs))}</td><td class="num">${t.spanCount}${t.dropped ? ` <span class="muted">(+${t.dropped} dropped)</span>` : ''}</td>
<td class="num">${t.errors ? `<span class="err" title="spans with status ERROR">✖ ${t.errors}</span>` : '<span class="ok">–</span>'}</td>
</tr>`,
  );
  const body = `<p class="muted">The last ${limits.maxTraces} traces received since ${esc(clock(limits.since))} (up to ${limits.maxSpans} spans each), in memory only. A task's spans arrive within a second or so of its end; reload for new ones.</p>
${
  traces.length
    ? `<table><thead><tr><th>started</th><th>trace (root span)</th><th>agent</th><th>task</th><th>outcome</th><th>duration</th><th>spans</th><th>errors</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
    : '<p>No trace yet: run a task (e.g. <code>npx starry run "Tell me what /root/secret.txt says." --agent a1 --config examples/eperm/agent.json</code>) and reload.</p>'
}`;
  return page('recent traces', body);
}

/** The page for a trace id the store does not hold (yet): it reloads itself, since spans may be on their way. */
export function missingPage(traceId: string, limits: PageLimits): string {
  return page(
    'trace not here',
    `<p>No span of trace <code>${esc(traceId)}</code> has arrived here. A task's spans come when they end (the task span last); this page reloads every 2 s. The viewer keeps the last ${limits.maxTraces} traces received since ${esc(clock(limits.since))}, so an older one is gone.</p><p><a href="/">All recent traces</a></p>`,
    '<meta http-equiv="refresh" content="2">',
  );
}

/** A value as the details show it. */
function shown(v: unknown): string {
  return esc(typeof v === 'string' ? v : JSON.stringify(v));
}

function table(rows: Array<[string, unknown]>): string {
  return `<table>${rows.map(([k, v]) => `<tr><td class="mono muted">${esc(k)}</td><td class="mono">${shown(v)}</td></tr>`).join('')}</table>`;
}

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];

/** An event's chip: its name and the one attribute a reader looks for (the pain's code, the breaker's rung). */
function chip(e: ReceivedSpan['events'][number]): string {
  const key = e.name === 'starry.pain' ? 'starry.pain.code' : e.name === 'starry.breaker' ? 'starry.breaker.rung' : '';
  const what = key && e.attributes[key] !== undefined ? ` ${String(e.attributes[key])}` : '';
  return `<span class="chip${e.name === 'starry.pain' ? ' pain' : ''}">◆ ${esc(e.name + what)}</span>`;
}

/**
 * A trace as a waterfall: every span a row, nested under its parent, its bar on the trace's time axis,
 * its events as marks on the bar and chips by its name; a click opens its attributes and events.
 * `open: true` opens every row.
 */
export function tracePage(trace: StoredTrace, open = false, live?: Pick<TraceSummary, 'state' | 'agentId'>): string {
  const summary = summarize(trace);
  const t = live?.state && !summary.outcome ? { ...summary, ...live } : summary;
  const t0 = t.start;
  const total = Math.max(t.durationMs, 0.001);
  const pct = (ms: number) => Math.min(100, Math.max(0, ((ms - t0) / total) * 100));
  const children = new Map<string | undefined, ReceivedSpan[]>();
  const roots = new Set(rootsOf(trace.spans));
  for (const s of trace.spans) {
    const parent = roots.has(s) ? undefined : s.parentSpanId;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const rows: string[] = [];
  const visit = (s: ReceivedSpan, depth: number) => {
    const failed = s.status === 2;
    const left = pct(s.start);
    const width = Math.max(pct(s.end) - left, 0.15);
    const marks = s.events
      .map(
        (e) =>
          `<span class="mark${e.name === 'starry.pain' ? ' pain' : ''}" style="left:${pct(e.time).toFixed(3)}%" title="${esc(e.name)}"></span>`,
      )
      .join('');
    const details: string[] = [
      `<h3>span</h3>${table([
        ['span id', s.spanId],
        ['parent', s.parentSpanId ?? '(none)'],
        ['kind', KINDS[s.kind] ?? s.kind],
        ['start', `${clock(s.start)} (+${duration(s.start - t0)})`],
        ['duration', duration(s.end - s.start)],
        ['status', ['unset', 'ok', 'ERROR'][s.status] ?? s.status],
        ...(s.statusMessage ? [['status message', s.statusMessage] as [string, unknown]] : []),
      ])}`,
      `<h3>attributes</h3>${Object.keys(s.attributes).length ? table(Object.entries(s.attributes)) : '<span class="muted">none</span>'}`,
    ];
    for (const e of s.events)
      details.push(
        `<h3>event ${esc(e.name)} <span class="muted">at +${esc(duration(e.time - t0))}</span></h3>${table(Object.entries(e.attributes))}`,
      );
    if (s.links.length) details.push(`<h3>links</h3>${table(s.links.map((l) => [l.traceId ?? '', l.spanId ?? '']))}`);
    rows.push(`<details class="span${failed ? ' failed' : ''}" id="span-${esc(s.spanId)}"${open ? ' open' : ''}>
<summary class="row"><span class="name" style="padding-left:${depth * 16}px" title="${esc(s.name)}"><b>${esc(s.name)}</b>${failed ? '<span class="chip error">error</span>' : ''}${s.events.map(chip).join('')}</span>
<span class="track"><span class="bar${failed ? ' err' : ` k${s.kind}`}" style="left:${left.toFixed(3)}%;width:${width.toFixed(3)}%"></span>${marks}</span>
<span class="dur">${esc(duration(s.end - s.start))}</span></summary>
<div class="info" style="margin-left:${depth * 16}px">${details.join('')}</div></details>`);
    for (const c of (children.get(s.spanId) ?? []).sort((a, b) => a.start - b.start)) visit(c, depth + 1);
  };
  for (const r of [...roots].sort((a, b) => a.start - b.start)) visit(r, 0);
  const fact = (k: string, v: string | undefined) =>
    v === undefined ? '' : `<span><span class="muted">${esc(k)}</span> ${esc(v)}</span>`;
  const axis = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => `<span style="left:${f * 100}%">${esc(duration(total * f))}</span>`)
    .join('');
  const body = `<div class="facts">${[
    fact('trace', t.traceId),
    fact('agent', t.agentId),
    fact('task', t.taskId),
    fact('workflow', t.workflowId),
    fact('outcome', t.outcome ?? (t.state ? outcomeText(t) : 'running (no final task span yet)')),
    fact('service', t.service),
    fact('started', clock(t.start)),
    fact('duration', duration(t.durationMs)),
    fact('spans', `${t.spanCount}${t.dropped ? ` (+${t.dropped} dropped by the viewer's bound)` : ''}`),
    fact('errors', String(t.errors)),
  ].join('')}</div>
<p class="muted">Click a row for its attributes and events · <a href="?open=all">open all</a> · <a href="/traces/${esc(t.traceId)}">close all</a></p>
<div class="row axis"><span>span</span><span class="track">${axis}</span><span class="dur">duration</span></div>
${rows.join('\n')}`;
  return page(`${t.rootName}${t.agentId ? ` · ${t.agentId}` : ''}${t.taskId ? ` · ${t.taskId}` : ''}`, body);
}
