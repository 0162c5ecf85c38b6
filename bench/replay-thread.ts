/**
 * The replay guarantee checked off the benchmark's main thread: histories replayed against the workers'
 * workflow code in a thread of their own.
 *
 * Why a thread: a replay runs the workflow sandbox in the calling thread (the SDK's replayer is in
 * debug mode), and the sandbox installs V8 promise hooks and an `Error.prepareStackTrace` there that
 * stay for good. On the main thread of a benchmark, which also runs the activities of both workers,
 * every later promise of theirs would pay the hook's stack-trace lookup (a `new Function` per promise),
 * which no production worker pays: it never replays in-process. The thread's hooks end with the thread.
 */
import { isMainThread, parentPort, Worker as Thread, workerData } from 'node:worker_threads';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { installWorkerLogger } from '../workers/log';
import { workflowSource } from '../workers/worker';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** One history to replay: its workflow's id (for the failure's message) and its events. */
export interface ToReplay {
  workflowId: string;
  events: HistoryEvent[];
}

/** What the thread answers: how many replayed, and each one that did not (its workflow, why). */
export interface Replayed {
  replayed: number;
  failures: string[];
}

/**
 * Replay `histories` in a new thread and wait for the answer.
 *
 * ```ts
 * const { replayed, failures } = await replayInThread([{ workflowId, events }], 'throughput-replay');
 * ```
 */
export function replayInThread(histories: ToReplay[], replayName: string): Promise<Replayed> {
  // Encoded here: protobuf's Long values do not survive a structured clone as Longs.
  const encoded = histories.map((h) => ({
    workflowId: h.workflowId,
    bytes: temporal.api.history.v1.History.encode({ events: h.events }).finish(),
  }));
  return new Promise((resolve, reject) => {
    const thread = new Thread(__filename, { workerData: { encoded, replayName } });
    let answered = false;
    thread.once('message', (m: Replayed) => {
      answered = true;
      resolve(m);
      // Done: its runtime need not wind down first.
      void thread.terminate();
    });
    thread.once('error', reject);
    thread.once('exit', (code) => {
      if (!answered) reject(new Error(`the replay thread exited (code ${code}) without an answer`));
    });
  });
}

async function replayHere(): Promise<void> {
  // The thread's own runtime: its warnings and errors, as the benchmark's worker logs them.
  installWorkerLogger('WARN', { coreErrorsOnly: true });
  const { encoded, replayName } = workerData as {
    encoded: { workflowId: string; bytes: Uint8Array }[];
    replayName: string;
  };
  const histories = encoded.map((h) => ({
    workflowId: h.workflowId,
    history: temporal.api.history.v1.History.decode(h.bytes),
  }));
  const answer: Replayed = { replayed: 0, failures: [] };
  for await (const r of Worker.runReplayHistories({ ...workflowSource(), replayName }, histories)) {
    answer.replayed++;
    if (r.error) answer.failures.push(`${r.workflowId}: ${String(r.error.message).slice(0, 200)}`);
  }
  parentPort?.postMessage(answer);
}

// A failure here is an unhandled rejection, which ends the thread with an 'error' the caller rejects with.
if (!isMainThread && (workerData as { replayName?: string } | undefined)?.replayName) void replayHere();
