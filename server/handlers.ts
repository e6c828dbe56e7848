// The handler map: one handler per operationId, assembled from the domain modules.
import { a2aHandlers } from './a2a/handlers.ts';
import { agentHandlers } from './agents/handlers.ts';
import { billingHandlers } from './billing/handlers.ts';
import type { AppHandlers } from './http/operations.ts';
import type { Contract } from './http/contract.ts';
import { identityHandlers } from './identity/handlers.ts';
import { protocolHandlers } from './protocols/handlers.ts';
import { createOpenAIModels } from './protocols/openai-models.ts';
import { knowledgeHandlers } from './knowledge/handlers.ts';
import { mcpHandlers } from './mcp/handlers.ts';
import { responseHandlers } from './responses/handlers.ts';
import { runHandlers } from './runs/handlers.ts';
import { sessionHandlers } from './sessions/handlers.ts';
import { teamHandlers } from './teams/handlers.ts';
import { modelHandlers } from './models/handlers.ts';
import type { Services } from './services.ts';
import { systemHandlers } from './system/handlers.ts';

/**
 * Every operation's handler. `satisfies AppHandlers` is the completeness proof: a missing operation, an
 * undeclared status or a body off the contract is a compile error, not a 501 at run time.
 */
export function buildHandlers(services: Services, contract: Contract) {
  // Runs per day are a quota of agent and team turns; where the body names the agent, the guard cannot.
  const checkRunQuota = async (userId: string) => {
    await services.quotas.enforce(userId, await services.accountPlans.planOf(userId), ['runs_per_day']);
  };
  return {
    ...systemHandlers({
      contract,
      startedAt: services.clock(),
      clock: services.clock,
      databaseReady: services.databaseReady,
      metrics: services.metrics,
      metricsConfig: services.config.metrics,
    }),
    ...identityHandlers({ ...services, devLinks: services.mailer.transport === 'log' && services.config.env !== 'production' }),
    ...agentHandlers(services),
    ...sessionHandlers({ sessions: services.chatSessions, runs: services.runs, engine: services.engine }),
    ...runHandlers(services),
    ...protocolHandlers(services),
    ...teamHandlers(services),
    ...billingHandlers(services),
    ...modelHandlers({
      models: services.models,
      usage: services.usage,
      virtualModels: createOpenAIModels({ ...services, checkRunQuota }),
    }),
    ...knowledgeHandlers(services),
    ...responseHandlers({ ...services, checkRunQuota }),
    ...a2aHandlers(services, contract),
    ...mcpHandlers({ ...services, publicUrl: services.config.publicUrl, corsOrigins: services.config.corsOrigins, planOf: services.accountPlans.planOf }),
  } satisfies AppHandlers;
}
