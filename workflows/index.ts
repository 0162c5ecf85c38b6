/** The workflow bundle's entry: everything registered on the worker. */
export { agentWorkflow, type AgentWorkflowInput } from './agent';
export { taskWorkflow, type TaskWorkflowInput, type TaskWorkflowOutput } from './task';
