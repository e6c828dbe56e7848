// The handler map: one handler per operationId, assembled from the domain modules.
import { createStubHandlers, type OperationId } from '../generated/server.gen.ts';
import { agentHandlers } from './agents/handlers.ts';
import { billingHandlers } from './billing/handlers.ts';
import { ApiError } from './http/errors.ts';
import type { AppHandlers, RequestContext } from './http/operations.ts';
import type { Principal } from './http/auth.ts';
import type { Contract } from './http/contract.ts';
import { identityHandlers } from './identity/handlers.ts';
import { agentProtocolHandlers } from './protocols/handlers.ts';
import { createOpenAIModels } from './protocols/openai-models.ts';
import { knowledgeHandlers } from './knowledge/handlers.ts';
import { metricsHandlers } from './metrics/handlers.ts';
import { runHandlers } from './runs/handlers.ts';
import { sessionHandlers } from './sessions/handlers.ts';
import { teamHandlers } from './teams/handlers.ts';
import { modelHandlers } from './models/handlers.ts';
import type { Services } from './services.ts';
import { systemHandlers } from './system/handlers.ts';

const stubs = new WeakSet<object>();

/** The answer of an operation not built yet: 501 through the envelope. */
export function notImplemented(operationId: OperationId) {
  const stub = async (): Promise<never> => {
    throw new ApiError('not_implemented', `${operationId} is not implemented yet.`);
  };
  stubs.add(stub);
  return stub;
}

export function buildHandlers(services: Services, contract: Contract): AppHandlers {
  return {
    ...createStubHandlers<Principal, RequestContext>(notImplemented),
    ...systemHandlers({ contract, startedAt: services.clock(), clock: services.clock, databaseReady: services.databaseReady }),
    ...identityHandlers(services),
    ...agentHandlers(services),
    ...sessionHandlers({ sessions: services.chatSessions, engine: services.engine }),
    ...runHandlers(services),
    ...agentProtocolHandlers(services),
    ...teamHandlers(services),
    ...billingHandlers(services),
    ...modelHandlers({
      models: services.models,
      usage: services.usage,
      virtualModels: createOpenAIModels({
        ...services,
        async checkRunQuota(userId) {
          await services.quotas.enforce(userId, await services.accountPlans.planOf(userId), ['runs_per_day']);
        },
      }),
    }),
    ...knowledgeHandlers(services),
    ...metricsHandlers({ metrics: services.metrics, config: services.config.metrics }),
  } satisfies AppHandlers;
}

/** The operations that still answer 501 `not_implemented`. */
export function unimplementedOperations(handlers: AppHandlers): OperationId[] {
  return (Object.keys(handlers) as OperationId[]).filter((operationId) => stubs.has(handlers[operationId]));
}
