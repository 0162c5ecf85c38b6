/** The workflow bundle's entry: everything registered on the worker. */
import { setWorkflowOptions } from '@temporalio/workflow';
import { taskWorkflow } from './task';

export { agentWorkflow, type AgentWorkflowInput } from './agent';
export { taskWorkflow, type TaskRunInput, type TaskRunOutput } from './task';

// A bug in a task's workflow code (a plain Error) fails that task workflow instead of failing its
// workflow task, which Temporal would retry forever with the agent stuck EXECUTING. The agent sees the
// child fail and pauses (ERROR_PAUSED, FATAL, alert) for a human — see docs/ARCHITECTURE.md.
setWorkflowOptions({ failureExceptionTypes: [Error] }, taskWorkflow);
