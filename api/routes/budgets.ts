/**
 * The shared budgets' routes: list, show, create and raise (docs/API.md). A tenant's budgets are its own
 * (budget-<tenant>:<name>), like its agents.
 */
import { createRoute, z } from '@hono/zod-openapi';
import { budgetCreateSchema, budgetNameSchema, budgetRaiseSchema, budgetStatusSchema } from '../../core/budget';
import { common, endpoint, json, problems, secured } from './kit';

const budgetPath = z.object({ name: budgetNameSchema() });
const BudgetCreateBodySchema = budgetCreateSchema().omit({ by: true });
const BudgetRaiseBodySchema = budgetRaiseSchema().omit({ by: true });

export const budgets = endpoint({
  name: 'budgets',
  role: 'viewer',
  route: createRoute({
    method: 'get',
    path: '/v1/budgets',
    summary: "The shared budgets (the caller's tenant's), from the visibility store",
    security: secured,
    responses: {
      200: json(z.object({ budgets: z.array(budgetStatusSchema()) }), 'Every running budget, by name'),
      ...problems(...common),
    },
  }),
  async handle(c, { agents }) {
    return c.json({ budgets: await agents.budgets().list() }, 200);
  },
});

export const budget = endpoint({
  name: 'budget',
  role: 'viewer',
  route: createRoute({
    method: 'get',
    path: '/v1/budgets/{name}',
    summary: "A shared budget's books: limit, spent, leased, available, its leases and its audit log",
    security: secured,
    request: { params: budgetPath },
    responses: { 200: json(budgetStatusSchema(), 'The budget'), ...problems(400, 404, ...common) },
  }),
  async handle(c, { agents }) {
    return c.json(await agents.budgets().show(c.req.valid('param').name), 200);
  },
});

export const createBudget = endpoint({
  name: 'createBudget',
  role: 'admin',
  route: createRoute({
    method: 'post',
    path: '/v1/budgets',
    summary: 'Create a shared budget that agents draw from (`budget` in their config); recorded with who did it',
    security: secured,
    request: { body: { content: { 'application/json': { schema: BudgetCreateBodySchema } }, required: true } },
    responses: {
      201: json(budgetStatusSchema(), 'Created; `Location` is the budget'),
      ...problems(400, 409, 413, ...common),
    },
  }),
  async handle(c, { p, agents }) {
    const created = await agents.budgets().create({ ...c.req.valid('json'), by: p.sub });
    c.header('Location', `/v1/budgets/${created.name}`);
    return c.json(created, 201);
  },
});

export const raiseBudget = endpoint({
  name: 'raiseBudget',
  role: 'admin',
  route: createRoute({
    method: 'post',
    path: '/v1/budgets/{name}/raise',
    summary: "Raise a shared budget's limit by `tokens`; recorded with who did it",
    security: secured,
    request: {
      params: budgetPath,
      body: { content: { 'application/json': { schema: BudgetRaiseBodySchema } }, required: true },
    },
    responses: { 200: json(budgetStatusSchema(), 'The budget now'), ...problems(400, 404, 413, ...common) },
  }),
  async handle(c, { p, agents }) {
    const raised = await agents.budgets().raise(c.req.valid('param').name, { ...c.req.valid('json'), by: p.sub });
    return c.json(raised, 200);
  },
});
