// Usage against the plan (GET /v1/account/usage), the plans there are (GET /v1/billing/plans), and the
// way to buy one when billing is on.
import { data, type Schemas } from '../api.ts';
import { returnUrl } from '../sign-in-links.ts';
import { ErrorMessage, formatBytes, formatNumber, formatTime, Loading, useAction, useFocusHeading, useLoad, useSession } from '../ui.tsx';

type Metric = Schemas['UsageMetric'];

const METRICS: Record<Metric, { label: string; bytes?: boolean }> = {
  requests_per_minute: { label: 'Requests this minute' },
  tokens_per_month: { label: 'Tokens this month' },
  runs_per_day: { label: 'Runs today' },
  agents: { label: 'Agents' },
  teams: { label: 'Teams' },
  knowledge_documents: { label: 'Knowledge documents' },
  knowledge_bytes: { label: 'Knowledge size', bytes: true },
};

function amount(value: number | null, bytes: boolean | undefined): string {
  if (value === null) return 'unlimited';
  return bytes ? formatBytes(value) : formatNumber(value);
}

function price(plan: Schemas['Plan']): string {
  if (!plan.price) return 'free';
  const money = new Intl.NumberFormat(undefined, { style: 'currency', currency: plan.price.currency.toUpperCase() }).format(plan.price.amount / 100);
  return `${money} a ${plan.price.interval}`;
}

export function Usage() {
  const { client } = useSession();
  const heading = useFocusHeading<HTMLHeadingElement>([]);
  const loaded = useLoad(() => Promise.all([data(client.GET('/v1/account/usage')), data(client.GET('/v1/billing/plans'))]), []);
  const checkout = useAction(async (planId: string) => {
    const session = await data(client.POST('/v1/billing/checkout', { body: { plan_id: planId, success_url: `${returnUrl()}#/usage`, cancel_url: `${returnUrl()}#/usage` } }));
    location.assign(session.url);
  });
  const portal = useAction(async () => {
    const session = await data(client.POST('/v1/billing/portal', { body: { return_url: `${returnUrl()}#/usage` } }));
    location.assign(session.url);
  });
  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (!loaded.data) return <Loading what="usage" />;
  const [usage, plans] = loaded.data;
  const plan = plans.data.find((candidate) => candidate.id === usage.plan_id);
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>
        Usage
      </h1>
      <p class="meta">
        <span>
          Plan <strong>{plan?.name ?? usage.plan_id}</strong>
        </span>
        <span>
          {formatTime(usage.period.start)} to {formatTime(usage.period.end)}
        </span>
      </p>
      <ul class="meters">
        {usage.limits.map((limit) => {
          const metric = METRICS[limit.metric];
          return (
            <li key={limit.metric}>
              <label for={`meter-${limit.metric}`}>{metric.label}</label>
              {limit.limit !== null ? <meter id={`meter-${limit.metric}`} min={0} max={limit.limit} high={limit.limit * 0.8} optimum={0} value={limit.used} /> : <span id={`meter-${limit.metric}`} />}
              <span class="amount">
                {amount(limit.used, metric.bytes)} of {amount(limit.limit, metric.bytes)}
                {limit.resets_at && <span class="muted"> · resets {formatTime(limit.resets_at)}</span>}
              </span>
            </li>
          );
        })}
      </ul>

      <h2>Tokens by model</h2>
      {usage.models.length === 0 ? (
        <p class="muted">No model calls this month.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Requests</th>
                <th scope="col">Prompt</th>
                <th scope="col">Completion</th>
                <th scope="col">Total</th>
              </tr>
            </thead>
            <tbody>
              {usage.models.map((model) => (
                <tr key={model.model}>
                  <td>{model.model}</td>
                  <td>{formatNumber(model.requests)}</td>
                  <td>{formatNumber(model.prompt_tokens)}</td>
                  <td>{formatNumber(model.completion_tokens)}</td>
                  <td>{formatNumber(model.total_tokens)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Plans</h2>
      <ul class="cards">
        {plans.data.map((candidate) => (
          <li key={candidate.id} class={`card${candidate.id === usage.plan_id ? ' current' : ''}`}>
            <h3>
              {candidate.name} <span class="muted">{price(candidate)}</span>
            </h3>
            {candidate.description && <p>{candidate.description}</p>}
            <ul class="limits">
              {(Object.keys(METRICS) as Metric[]).map((metric) => (
                <li key={metric}>
                  {METRICS[metric].label.replace(/ (this|today).*/, '')}: {amount(candidate.limits[metric], METRICS[metric].bytes)}
                  {metric === 'requests_per_minute' ? ' a minute' : metric === 'tokens_per_month' ? ' a month' : metric === 'runs_per_day' ? ' a day' : ''}
                </li>
              ))}
            </ul>
            {candidate.id === usage.plan_id ? (
              <p class="ok">Your plan</p>
            ) : (
              candidate.purchasable && (
                <button type="button" class="primary" disabled={checkout.busy} onClick={() => void checkout.run(candidate.id)}>
                  Switch to {candidate.name}
                </button>
              )
            )}
          </li>
        ))}
      </ul>
      <ErrorMessage error={checkout.error} />
      {plans.data.some((candidate) => candidate.purchasable) && (
        <p>
          <button type="button" disabled={portal.busy} onClick={() => void portal.run()}>
            Manage billing
          </button>
        </p>
      )}
      <ErrorMessage error={portal.error} />
    </section>
  );
}
