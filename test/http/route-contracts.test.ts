import request from 'supertest';
import { createApp } from '../../src/http/app';
import { ApiError } from '../../src/kernel/errors';
import { createLogger } from '../../src/kernel/log';
import { defineRoute } from '../../src/kernel/route';
import { z } from '../../src/kernel/schema';

/**
 * Routes carry their whole contract, and the tests hold them to it (as Logto's koaGuard does): in
 * strict mode (NODE_ENV=test) a success body its schema refuses, or a problem code the route does
 * not declare, is a 500, so a test of that route fails instead of passing on a broken contract.
 */
const Thing = z.object({ id: z.string(), count: z.number().int() });

const routes = [
  defineRoute(
    {
      method: 'get',
      path: '/good',
      operationId: 'good',
      tag: 't',
      summary: 's',
      auth: null,
      success: { status: 200, description: 'd', schema: Thing },
    },
    async () => ({ body: { id: 'a', count: 1 } }),
  ),
  defineRoute(
    {
      method: 'get',
      path: '/bad-body',
      operationId: 'badBody',
      tag: 't',
      summary: 's',
      auth: null,
      success: { status: 200, description: 'd', schema: Thing },
    },
    async () => ({ body: { id: 'a', count: 1.5 } }),
  ),
  defineRoute(
    {
      method: 'get',
      path: '/declared',
      operationId: 'declared',
      tag: 't',
      summary: 's',
      auth: null,
      success: { status: 200, description: 'd', schema: Thing },
      errors: ['member_exists'],
    },
    async () => {
      throw new ApiError('member_exists');
    },
  ),
  defineRoute(
    {
      method: 'get',
      path: '/undeclared',
      operationId: 'undeclared',
      tag: 't',
      summary: 's',
      auth: null,
      success: { status: 200, description: 'd', schema: Thing },
    },
    async () => {
      throw new ApiError('last_owner');
    },
  ),
];

const app = (strictContracts: boolean) => request(createApp(routes, { log: createLogger('silent'), strictContracts }).callback());

describe('route contracts in strict mode', () => {
  it('passes an answer that keeps the contract', async () => {
    expect((await app(true).get('/good').expect(200)).body).toEqual({ id: 'a', count: 1 });
    expect((await app(true).get('/declared').expect(409)).body.code).toBe('member_exists');
  });

  it('turns a body its success schema refuses into a 500', async () => {
    expect((await app(true).get('/bad-body')).status).toBe(500);
    expect((await app(false).get('/bad-body')).status).toBe(200);
  });

  it('turns a problem code the route does not declare into a 500', async () => {
    expect((await app(true).get('/undeclared')).status).toBe(500);
    expect((await app(false).get('/undeclared')).status).toBe(409);
  });
});
