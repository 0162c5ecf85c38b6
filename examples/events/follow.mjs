// Follow a task's live events over HTTP, resuming after a dropped connection with Last-Event-ID.
// Usage: STARRY_TOKEN=… node examples/events/follow.mjs http://127.0.0.1:8080 agent-a1-task-1
const [base = 'http://127.0.0.1:8080', workflowId] = process.argv.slice(2);
if (!workflowId) throw new Error('usage: node follow.mjs <api url> <task workflow id>');
let lastEventId; // the id of the last event read: a reconnect resumes after it, no gap, no duplicate

for (;;) {
  const headers = { authorization: `Bearer ${process.env.STARRY_TOKEN}` };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const res = await fetch(`${base}/v1/tasks/${workflowId}/events?from=0`, { headers }).catch((err) => err);
  if (res instanceof Error || res.status === 503) {
    await new Promise((r) => setTimeout(r, 2000)); // the API or Temporal is away: try again
    continue;
  }
  if (!res.ok) throw new Error(`${res.status}: ${(await res.json()).detail}`); // 400, 401, 403, 404: fix the call
  let buffer = '';
  let ended = false;
  try {
    for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      for (let end; (end = buffer.indexOf('\n\n')) >= 0; buffer = buffer.slice(end + 2)) {
        const field = (name) => buffer.slice(0, end).match(new RegExp(`^${name}: (.*)$`, 'm'))?.[1];
        const [event, id, data] = [field('event'), field('id'), field('data')];
        if (!event) continue; // a keep-alive comment, or the retry hint
        if (event === 'error' && !JSON.parse(data).retryable) throw new Error(data); // not worth a retry
        if (id) lastEventId = id;
        console.log(event, data);
        if (event === 'end') ended = true;
      }
    }
  } catch (err) {
    if (!(err instanceof TypeError)) throw err; // a dropped connection is a TypeError: resume after the last event
  }
  if (ended) break;
}
