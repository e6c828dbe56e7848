// Type tests: the compiler rejects a handler map that misses an operation, a handler that answers a
// status its operation does not declare, and a body off the contract.
import { describe, expectTypeOf, it } from 'vitest';
import type { HandlerResult, OperationId, SseFrame } from '../../generated/server.gen.ts';
import type { components } from '../../generated/openapi.gen.ts';
import type { Principal } from './auth.ts';
import type { AppHandlers } from './operations.ts';
import type { buildHandlers } from '../handlers.ts';

type HandlerMap = ReturnType<typeof buildHandlers>;

describe('the handler map type', () => {
  it('has a handler for every operation in the real map', () => {
    expectTypeOf<Exclude<OperationId, keyof HandlerMap>>().toEqualTypeOf<never>();
    expectTypeOf<HandlerMap>().toExtend<AppHandlers>();
  });

  it('rejects the real map with one handler taken out', () => {
    const withoutOne = (handlers: HandlerMap) => {
      const { deleteAgent: _removed, ...rest } = handlers;
      // @ts-expect-error deleteAgent is missing from the map
      const map: AppHandlers = rest;
      return map;
    };
    expectTypeOf(withoutOne).toBeFunction();
  });

  it('rejects a status the operation does not declare', () => {
    const handler: AppHandlers['deleteAgent'] = async () =>
      // @ts-expect-error deleteAgent declares 204, not 200
      ({ status: 200 });
    expectTypeOf(handler).returns.resolves.toEqualTypeOf<HandlerResult<'deleteAgent', 204>>();
  });

  it('rejects a body that does not match the schema', () => {
    // @ts-expect-error version is required and uptime_seconds is a number
    const handler: AppHandlers['getHealth'] = async () => ({ status: 200, body: { status: 'ok', uptime_seconds: 'long' } });
    expectTypeOf(handler).parameter(0).toHaveProperty('requestId').toBeString();
  });

  it('types the request from the contract', () => {
    type Request = Parameters<AppHandlers['updateAgent']>[0];
    expectTypeOf<Request['params']>().toEqualTypeOf<{ agentId: string }>();
    expectTypeOf<Request['body']>().toEqualTypeOf<components['schemas']['AgentUpdate']>();
    expectTypeOf<Request['auth']['userId']>().toBeString();
    type Public = Parameters<AppHandlers['getHealth']>[0];
    expectTypeOf<Public['auth']>().toEqualTypeOf<Principal | null>();
  });

  it('types streams by the event schema', () => {
    type Result = HandlerResult<'chatWithAgent', 200>;
    expectTypeOf<Extract<Result, { stream: unknown }>['stream']>().toEqualTypeOf<
      AsyncIterable<SseFrame<components['schemas']['RunEvent']>>
    >();
  });
});
