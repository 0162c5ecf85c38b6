/**
 * How workers reach Temporal: the same environment as clients (client/connection.ts), over the native
 * connection the worker needs.
 */
import { NativeConnection } from '@temporalio/worker';
import { connectionOptions, temporalEnv, type TemporalEnv } from '../client/connection';

export { connectClient, TASK_QUEUE, temporalEnv, type TemporalEnv } from '../client/connection';

export function connectWorker(e: TemporalEnv = temporalEnv()): Promise<NativeConnection> {
  return NativeConnection.connect(connectionOptions(e));
}
