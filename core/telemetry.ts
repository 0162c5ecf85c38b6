/**
 * What a task's trace and metrics say, as plain data (docs/ARCHITECTURE.md#workflows): the span names and
 * attributes of the OpenTelemetry GenAI conventions (`invoke_agent`, `chat {model}`, `execute_tool {name}`),
 * the span events of the facts `TaskRun` and `SafetyMonitor` decide (pain, breakers, halt, approvals,
 * continue-as-new), and the metrics: the counters those facts add to (`METRIC`, `countsOf`) and the
 * activities' histograms. Pure and OpenTelemetry-free: the task workflow (workflows/telemetry.ts) turns
 * these into spans, events and counter additions when the worker traces or meters.
 *
 * No prompt, answer, argument or result text goes into a span: only names, codes and counts.
 */
import type { SafetyConfig } from './config';
import type { NormalizedError } from './errors';
import { calculateSeverity, type SafetyAlert } from './guides';
import type { ChatMessage, LlmResponse, LlmToolCall } from './llm';
import type { LlmSpec } from './llm-spec';
import { priceFor, type PricingTable } from './pricing';
import { failuresInWindow, type SafetyCounters } from './safety-counters';
import { HISTORY_LIMITS, type LockVerdict } from './safety-rungs';

/** A span attribute value: what OpenTelemetry carries (no nested objects). */
export type AttributeValue = string | number | boolean | string[];
export type Attributes = Record<string, AttributeValue>;

/** One span event, as `TaskRun` records it for the workflow to add to the task's span. */
export interface TelemetryEvent {
  name: string;
  attributes: Attributes;
}

/** Span and event names. */
export const SPAN = {
  task: 'invoke_agent',
  chat: (model: string) => `chat ${model}`,
  tool: (name: string) => `execute_tool ${name}`,
} as const;

export const EVENT = {
  pain: 'starry.pain',
  breaker: 'starry.breaker',
  halt: 'starry.halt',
  approvalAsked: 'starry.approval.asked',
  approvalDecided: 'starry.approval.decided',
  continueAsNew: 'starry.continue_as_new',
} as const;

/** A metric: its name, kind and unit (UCUM, as OpenTelemetry writes them), and a histogram's buckets. */
export interface MetricSpec {
  name: string;
  kind: 'counter' | 'histogram';
  unit: string;
  description: string;
  /** Explicit bucket boundaries (the GenAI conventions' advice). */
  buckets?: readonly number[];
}

/** The GenAI conventions' advice for token counts: powers of 4 from 1 to 4^13. */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
/** The GenAI conventions' advice for durations in seconds: doubling from 10 ms to 81.92 s. */
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/**
 * Every metric a worker emits besides Temporal's own (`temporal_*`). The counters are added to by the
 * task workflow (replay-safe: a replayed activation adds nothing), the histograms recorded by the
 * activities. Attributes stay low-cardinality: codes, kinds, the worker's own names (`meteredModel`,
 * `meteredToolName`: never a name a task chose), never agent or task ids (spans carry those).
 */
export const METRIC = {
  ticks: { name: 'starry.ticks', kind: 'counter', unit: '{tick}', description: 'Ticks started by tasks' },
  pain: {
    name: 'starry.pain',
    kind: 'counter',
    unit: '{pain}',
    description: 'Failed tool calls fed back to the agent as pain, by code and kind',
  },
  breakerTrips: {
    name: 'starry.breaker.trips',
    kind: 'counter',
    unit: '{trip}',
    description: 'Safety breaker rungs that tripped, by rung',
  },
  lockouts: {
    name: 'starry.lockouts',
    kind: 'counter',
    unit: '{lockout}',
    description: 'Tasks that locked their agent, by lock reason and the agent state it left',
  },
  halts: { name: 'starry.halts', kind: 'counter', unit: '{halt}', description: 'Tasks stopped by a human halt' },
  tasks: { name: 'starry.tasks', kind: 'counter', unit: '{task}', description: 'Task runs ended, by outcome' },
  tokenUsage: {
    name: 'gen_ai.client.token.usage',
    kind: 'histogram',
    unit: '{token}',
    description:
      'Tokens used per LLM call, by token type: input, output, and cache_read (the part of input read from the provider cache)',
    buckets: TOKEN_BUCKETS,
  },
  operationDuration: {
    name: 'gen_ai.client.operation.duration',
    kind: 'histogram',
    unit: 's',
    description: 'LLM call duration (one attempt)',
    buckets: DURATION_BUCKETS,
  },
  toolDuration: {
    name: 'starry.tool.duration',
    kind: 'histogram',
    unit: 's',
    description: 'Tool call duration (one attempt), by tool',
    buckets: DURATION_BUCKETS,
  },
} as const satisfies Record<string, MetricSpec>;

/** The workflow's counters. */
export type CounterSpec = (typeof METRIC)['ticks' | 'pain' | 'breakerTrips' | 'lockouts' | 'halts' | 'tasks'];

/** One addition to a counter, as `TaskRun` records it for the workflow to emit. */
export interface MetricCount {
  metric: CounterSpec;
  value: number;
  attributes: Record<string, string>;
}

const count = (metric: CounterSpec, attributes: Record<string, string> = {}): MetricCount => ({
  metric,
  value: 1,
  attributes,
});

/** A tick started. */
export function tickCount(): MetricCount {
  return count(METRIC.ticks);
}

/**
 * The counters a span event adds to: pain by code and kind, a breaker trip by rung, a halt.
 *
 * ```ts
 * countsOf(painEvent(eperm, 1, 1)) // [{ metric: METRIC.pain, value: 1, attributes: { 'starry.pain.code': 'EPERM', 'starry.pain.kind': 'execution' } }]
 * ```
 */
export function countsOf(event: TelemetryEvent): MetricCount[] {
  const a = event.attributes;
  switch (event.name) {
    case EVENT.pain:
      return [
        count(METRIC.pain, {
          'starry.pain.code': String(a['starry.pain.code']),
          'starry.pain.kind': String(a['starry.pain.kind']),
        }),
      ];
    case EVENT.breaker:
      return [count(METRIC.breakerTrips, { 'starry.breaker.rung': String(a['starry.breaker.rung']) })];
    case EVENT.halt:
      return [count(METRIC.halts)];
    default:
      return [];
  }
}

/**
 * The counters a run's end adds to: the task by outcome, and a lockout when it locked the agent (a breaker
 * or a fatal error).
 *
 * ```ts
 * endCounts('SUSPENDED', { agentState: 'SAFETY_LOCKOUT', reason: { code: 'LOOP_CAP', message } })
 * // [tasks {starry.task.outcome: SUSPENDED}, lockouts {starry.lockout.reason: LOOP_CAP, starry.agent.state: SAFETY_LOCKOUT}]
 * ```
 */
export function endCounts(outcome: string, lock?: LockVerdict): MetricCount[] {
  const counts = [count(METRIC.tasks, { 'starry.task.outcome': outcome })];
  if (lock)
    counts.push(
      count(METRIC.lockouts, { 'starry.lockout.reason': lock.reason.code, 'starry.agent.state': lock.agentState }),
    );
  return counts;
}

/**
 * A metric attribute's value for what the worker does not know (OpenTelemetry's spelling, as `error.type`'s).
 * Each distinct value of an attribute is a series for the worker's life (a histogram's is a dozen and more),
 * so a name a task chooses freely never becomes one: it is this.
 */
export const OTHER = '_OTHER';

/**
 * The model an LLM call's metrics name: the spec's model when the worker's price table (`STARRY_PRICING`,
 * the operator's, at most 256 entries) has a price for it, else `_OTHER`. A task may name any model (any
 * text after `openai:`, any script file), and the agent's own table is the task's to write.
 *
 * ```ts
 * meteredModel({ provider: 'openai', model: 'gpt-4o-mini' }, { 'openai:gpt-4o-mini': price }) // 'gpt-4o-mini'
 * meteredModel({ provider: 'openai', model: 'made-up-1' }, { 'openai:gpt-4o-mini': price })   // '_OTHER'
 * ```
 */
export function meteredModel(spec: LlmSpec, workerPricing: PricingTable | undefined): string {
  return priceFor(workerPricing, spec) ? llmTarget(spec).model : OTHER;
}

/**
 * The attributes of an LLM call's histograms (`gen_ai.client.operation.duration`; with `gen_ai.token.type`,
 * `gen_ai.client.token.usage`): the provider, the model as `meteredModel` bounds it by the worker's
 * price table, and `error.type` when it failed.
 *
 * ```ts
 * llmMetricAttributes({ provider: 'openai', model: 'gpt-4o-mini' }, { pricing }) // { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o-mini' }
 * ```
 */
export function llmMetricAttributes(
  spec: LlmSpec,
  { pricing, failed }: { pricing?: PricingTable | undefined; failed?: { code?: unknown } | undefined } = {},
): Record<string, string> {
  return {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': llmTarget(spec).provider,
    'gen_ai.request.model': meteredModel(spec, pricing),
    ...(failed ? { 'error.type': errorType(failed) } : {}),
  };
}

/** Where a called tool comes from: the worker (built-in or its own), an MCP server of the task's, or neither. */
export type ToolOrigin = 'worker' | 'mcp' | 'unknown';

/**
 * The name a tool call's metrics give it: a tool of the worker by its name (the worker's code names
 * those), a tool of an MCP server `mcp` (the task names its servers, a server its tools), anything else
 * `_OTHER`.
 *
 * ```ts
 * meteredToolName('fs.read', 'worker') // 'fs.read'
 * meteredToolName('github.search', 'mcp') // 'mcp'
 * ```
 */
export function meteredToolName(name: string, origin: ToolOrigin): string {
  return origin === 'worker' ? name : origin === 'mcp' ? 'mcp' : OTHER;
}

/**
 * The attributes of a tool call's `starry.tool.duration`: its name (as `meteredToolName` gives it), and
 * `error.type` (the normalized code) when it failed.
 *
 * ```ts
 * toolMetricAttributes('fs.read', { code: 'EPERM' }) // { 'gen_ai.tool.name': 'fs.read', 'error.type': 'EPERM' }
 * ```
 */
export function toolMetricAttributes(name: string, failed?: { code?: unknown }): Record<string, string> {
  return { 'gen_ai.tool.name': name, ...(failed ? { 'error.type': errorType(failed) } : {}) };
}

/**
 * The `gen_ai.provider.name` and the model of an LLM spec. Gemini may be AI Studio or Vertex (the worker's
 * environment decides), so it is `gcp.gen_ai`; the local and scripted controllers are ours.
 *
 * ```ts
 * llmTarget({ provider: 'openai', model: 'gpt-4o-mini' }) // { provider: 'openai', model: 'gpt-4o-mini' }
 * llmTarget({ provider: 'scripted', file: '/tmp/turns.json' }) // { provider: 'openstarry.scripted', model: 'turns.json' }
 * ```
 */
export function llmTarget(spec: LlmSpec): { provider: string; model: string } {
  switch (spec.provider) {
    case 'openai':
      return { provider: 'openai', model: spec.model };
    case 'gemini':
      return { provider: 'gcp.gen_ai', model: spec.model };
    case 'bedrock':
      return { provider: 'aws.bedrock', model: spec.model };
    case 'local':
      return { provider: 'openstarry.local', model: basename(spec.modelPath) };
    case 'scripted':
      return { provider: 'openstarry.scripted', model: basename(spec.file) };
  }
}

function basename(p: string): string {
  return p.split('/').pop() ?? p;
}

/**
 * The task span's attributes at its start (ids and sizes, never the goal's text).
 *
 * ```ts
 * taskSpanAttributes({ agentId: 'a1', taskId: 'task-1', goal: 'Read notes.md', llm })
 * // { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.id': 'a1', 'starry.task.id': 'task-1', 'starry.goal.length': 13, ... }
 * ```
 */
export function taskSpanAttributes(task: { agentId: string; taskId: string; goal: string; llm: LlmSpec }): Attributes {
  const { provider, model } = llmTarget(task.llm);
  return {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.id': task.agentId,
    'gen_ai.conversation.id': task.taskId,
    'starry.task.id': task.taskId,
    'starry.goal.length': task.goal.length,
    'gen_ai.provider.name': provider,
    'gen_ai.request.model': model,
  };
}

/**
 * An LLM call's span: its name and the attributes known before the call (the conventions want them at
 * span creation, for samplers).
 *
 * ```ts
 * chatSpan({ provider: 'gemini', model: 'gemini-2.5-flash' }, 3) // { name: 'chat gemini-2.5-flash', attributes: { ... 'starry.tick': 3 } }
 * ```
 */
export function chatSpan(
  spec: LlmSpec,
  tick: number,
  maxOutputTokens?: number,
): { name: string; attributes: Attributes } {
  const { provider, model } = llmTarget(spec);
  return {
    name: SPAN.chat(model),
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': provider,
      'gen_ai.request.model': model,
      'starry.tick': tick,
      ...(maxOutputTokens !== undefined ? { 'gen_ai.request.max_tokens': maxOutputTokens } : {}),
    },
  };
}

/**
 * What the answer adds to its `chat` span: the token counts (the cached input tokens as the GenAI
 * conventions' `gen_ai.usage.cache_read.input_tokens`, part of the input tokens, when the provider
 * reported them), its cost when the task has a price, and why the model stopped (`tool_calls` when it
 * asked for tools, else `stop`).
 *
 * ```ts
 * chatResultAttributes({ toolCalls: [], usage: { inputTokens: 100, outputTokens: 10 } })
 * // { 'gen_ai.usage.input_tokens': 100, 'gen_ai.usage.output_tokens': 10, 'gen_ai.response.finish_reasons': ['stop'] }
 * ```
 */
export function chatResultAttributes(response: Pick<LlmResponse, 'toolCalls' | 'usage'>, costUsd?: number): Attributes {
  const { cachedInputTokens } = response.usage;
  return {
    'gen_ai.usage.input_tokens': response.usage.inputTokens,
    'gen_ai.usage.output_tokens': response.usage.outputTokens,
    ...(cachedInputTokens !== undefined ? { 'gen_ai.usage.cache_read.input_tokens': cachedInputTokens } : {}),
    ...(costUsd !== undefined ? { 'starry.llm.cost_usd': costUsd } : {}),
    'gen_ai.response.finish_reasons': [response.toolCalls.length ? 'tool_calls' : 'stop'],
  };
}

/**
 * A tool call's span: its name and attributes (the call id, not its arguments).
 *
 * ```ts
 * toolSpan('fs.read', 't1-0', 1) // { name: 'execute_tool fs.read', attributes: { 'gen_ai.tool.name': 'fs.read', ... } }
 * ```
 */
export function toolSpan(name: string, callId: string, tick: number): { name: string; attributes: Attributes } {
  return {
    name: SPAN.tool(name),
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': name,
      'gen_ai.tool.type': 'function',
      'gen_ai.tool.call.id': callId,
      'starry.tick': tick,
    },
  };
}

/** The pain levels by the seeds' severity (core/guides/pain.ts). */
const PAIN_LEVEL = { '🔥🔥🔥 Critical Pain': 3, '⚡ Medium Pain': 2, '💧 Low Pain': 1 } as const;

/**
 * A failed tool call fed back as pain: its code, kind, level (3 critical, 2 medium, 1 low, as the seeds
 * grade it), source and the consecutive failures with it.
 *
 * ```ts
 * painEvent(eperm, 1, 1).attributes // { 'starry.pain.code': 'EPERM', 'starry.pain.level': 3, ... }
 * ```
 */
export function painEvent(error: NormalizedError, consecutiveFailures: number, tick: number): TelemetryEvent {
  return {
    name: EVENT.pain,
    attributes: {
      'starry.pain.code': error.code,
      'starry.pain.kind': error.kind,
      'starry.pain.level': PAIN_LEVEL[calculateSeverity(error)],
      'starry.pain.source': error.source,
      'starry.pain.consecutive_failures': consecutiveFailures,
      'starry.tick': tick,
    },
  };
}

/** What a breaker rung counted when it tripped. */
export interface BreakerFacts {
  counters?: SafetyCounters;
  /** The tick the loop cap counted. */
  tick?: number;
  /** The agent's tokens before the call the budget refused. */
  tokensUsed?: number;
  /** The agent's cost in USD before the call the cost budget refused. */
  costUsd?: number;
  /** The task's history size when the history rung tripped. */
  historyEvents?: number;
}

/**
 * The breaker rungs that tripped in a verdict (`SafetyMonitor`'s alerts and lock), each with what it
 * counted, its threshold and the resulting state: `alerted` (a repeat alert), `turn_skipped` (frustration)
 * or the agent's locked state. A fatal error's lock is not a breaker (its pain says it).
 *
 * ```ts
 * breakerEvents(safety, { alerts: [], lock: { agentState: 'SAFETY_LOCKOUT', reason: { code: 'LOOP_CAP', message } } }, { tick: 51 })
 * // [{ name: 'starry.breaker', attributes: { 'starry.breaker.rung': 'LOOP_CAP', 'starry.breaker.count': 51, 'starry.breaker.threshold': 50, 'starry.breaker.state': 'SAFETY_LOCKOUT' } }]
 * ```
 */
export function breakerEvents(
  safety: SafetyConfig,
  verdict: { alerts?: readonly SafetyAlert[]; lock?: LockVerdict },
  facts: BreakerFacts,
): TelemetryEvent[] {
  const events: TelemetryEvent[] = [];
  const add = (rung: string, count: number, threshold: number, state: string) =>
    events.push({
      name: EVENT.breaker,
      attributes: {
        'starry.breaker.rung': rung,
        'starry.breaker.count': count,
        'starry.breaker.threshold': threshold,
        'starry.breaker.state': state,
      },
    });
  for (const alert of verdict.alerts ?? []) {
    if (alert.kind === 'REPEAT_ALERT') add(alert.kind, alert.repeatCount, safety.repeatThreshold, 'alerted');
    else add(alert.kind, alert.consecutiveFailures, safety.frustrationThreshold, 'turn_skipped');
  }
  const lock = verdict.lock;
  if (!lock) return events;
  const { code } = lock.reason;
  const { counters } = facts;
  const measured: Partial<Record<string, [number, number]>> = {
    REPEATED_FAILURE: [counters?.repeat?.count ?? 0, safety.repeatThreshold],
    ERROR_CASCADE: [counters ? failuresInWindow(counters) : 0, safety.cascadeErrors],
    LOOP_CAP: [facts.tick ?? 0, safety.maxTicks],
    BUDGET_EXHAUSTED: [facts.tokensUsed ?? 0, safety.tokenBudget],
    COST_BUDGET_EXHAUSTED: [facts.costUsd ?? 0, safety.costBudgetUsd ?? 0],
    HISTORY_LIMIT: [facts.historyEvents ?? 0, Math.floor(HISTORY_LIMITS.events * HISTORY_LIMITS.share)],
  };
  const m = measured[code];
  if (m) add(code, m[0], m[1], lock.agentState);
  return events;
}

/** A remote span, as a W3C `traceparent` names it. */
export interface RemoteSpan {
  traceId: string;
  spanId: string;
  /** 1: the caller sampled it. */
  traceFlags: number;
}

/**
 * The span a `traceparent` names (checked by the contract's `traceparentSchema` before it gets here).
 *
 * ```ts
 * remoteSpan('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
 * // { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 }
 * ```
 */
export function remoteSpan(traceparent: string): RemoteSpan {
  const [, traceId = '', spanId = '', flags = '00'] = traceparent.split('-');
  return { traceId, spanId, traceFlags: parseInt(flags, 16) & 1 };
}

/**
 * Events of rarer facts: a halt, an approval asked and decided, the move to a fresh history.
 *
 * ```ts
 * haltEvent(4) // { name: 'starry.halt', attributes: { 'starry.tick': 4 } }
 * ```
 */
export function haltEvent(tick: number): TelemetryEvent {
  return { name: EVENT.halt, attributes: { 'starry.tick': tick } };
}

export function approvalAskedEvent(p: { callId: string; tool: string; rule: string; tick: number }): TelemetryEvent {
  return {
    name: EVENT.approvalAsked,
    attributes: {
      'gen_ai.tool.call.id': p.callId,
      'gen_ai.tool.name': p.tool,
      'starry.approval.rule': p.rule,
      'starry.tick': p.tick,
    },
  };
}

export function approvalDecidedEvent(callId: string, decision: 'approved' | 'denied' | 'expired'): TelemetryEvent {
  return {
    name: EVENT.approvalDecided,
    attributes: { 'gen_ai.tool.call.id': callId, 'starry.approval.decision': decision },
  };
}

export function continueAsNewEvent(tick: number, historyEvents: number): TelemetryEvent {
  return { name: EVENT.continueAsNew, attributes: { 'starry.tick': tick, 'starry.history.events': historyEvents } };
}

/**
 * The `error.type` of a failed span: the normalized code when the failure carries one, else `_OTHER` (the
 * conventions' fallback).
 *
 * ```ts
 * errorType({ code: 'EPERM' }) // 'EPERM'
 * ```
 */
export function errorType(error: { code?: unknown } | undefined): string {
  return typeof error?.code === 'string' && error.code ? error.code : OTHER;
}

// ---- content, only when the operator opts in ------------------------------------------------------

/** The most characters a content attribute carries; longer text is cut with a note. */
export const CONTENT_CHARS = 32_768;

function capped(text: string): string {
  return text.length <= CONTENT_CHARS
    ? text
    : `${text.slice(0, CONTENT_CHARS)}… [cut: ${text.length - CONTENT_CHARS} more characters]`;
}

/** A message as the GenAI conventions write it: a role and its parts. */
function conventionMessage(m: ChatMessage | { role: 'assistant'; text?: string; toolCalls?: LlmToolCall[] }) {
  const parts: Record<string, unknown>[] = [];
  if (m.role === 'tool') parts.push({ type: 'tool_call_response', id: m.callId, response: m.text });
  else if (m.text !== undefined) parts.push({ type: 'text', content: m.text });
  if (m.role === 'assistant')
    for (const c of m.toolCalls ?? []) parts.push({ type: 'tool_call', id: c.id, name: c.name, arguments: c.args });
  return { role: m.role, parts };
}

/**
 * What an LLM call sent and got, for the attempt's span when the operator opted in
 * (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`): the conventions' `gen_ai.input.messages`,
 * `gen_ai.output.messages` (JSON), each cut at `CONTENT_CHARS`.
 *
 * ```ts
 * chatContentAttributes([{ role: 'user', text: 'hi' }], { text: 'hello', toolCalls: [] })
 * // { 'gen_ai.input.messages': '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]', 'gen_ai.output.messages': '[…]' }
 * ```
 */
export function chatContentAttributes(
  messages: readonly ChatMessage[],
  answer: { text?: string; toolCalls: LlmToolCall[] },
): Attributes {
  const output = conventionMessage({ role: 'assistant', text: answer.text, toolCalls: answer.toolCalls });
  return {
    'gen_ai.input.messages': capped(JSON.stringify(messages.map(conventionMessage))),
    'gen_ai.output.messages': capped(
      JSON.stringify([{ ...output, finish_reason: answer.toolCalls.length ? 'tool_call' : 'stop' }]),
    ),
  };
}

/**
 * A tool call's arguments and result (or error message) for the attempt's span, when the operator opted
 * in: `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, each cut at `CONTENT_CHARS`.
 */
export function toolContentAttributes(args: unknown, result: unknown): Attributes {
  const text = (v: unknown) => capped(typeof v === 'string' ? v : JSON.stringify(v ?? null));
  return { 'gen_ai.tool.call.arguments': text(args), 'gen_ai.tool.call.result': text(result) };
}
