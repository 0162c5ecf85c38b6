/**
 * The task's first step: the tools it is offered, listed by the worker (a local activity: the listing is
 * short and the worker running this workflow has the tools, so it costs no extra workflow task before
 * the first tick), then what the hooks make of the listing (a tool worker's list, the telemetry switches).
 * A run that continued as new carries its tools in its input.
 */
import { priceFor } from '../../core/pricing';
import type { TaskEnd } from '../../core/task-run';
import type { TaskScope } from './scope';
import { report } from './progress';

/** List the task's tools and offer them; the end of a task whose tools could not be listed. */
export async function setUp(t: TaskScope): Promise<TaskEnd | undefined> {
  report(t.run, 'EXECUTING');
  if (t.input.tools) return undefined;
  const { config } = t;
  try {
    const request = { workspace: config.workspace, tools: config.tools, llm: config.llm };
    const listed = await t.call('tools', () => t.local.listTools(request));
    const tools = await t.hooks.toolsListed(t, listed, request);
    t.run.offer(tools.specs, tools.shellAllow, tools.approval);
    // The agent's price for its model wins over the worker's; the answer is in the history, so a replay prices alike.
    t.run.priced(priceFor(config.pricing, config.llm) ?? listed.price);
    return undefined;
  } catch (err) {
    if (t.haltedBy(err)) return t.run.cancelled();
    return t.run.setupFailed(t.toolFacts(err, 'listTools').error);
  }
}
