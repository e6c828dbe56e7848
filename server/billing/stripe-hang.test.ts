// A Stripe API that accepts connections and never answers: checkout used to take 61 s to fail. Each
// attempt has a deadline now (STRIPE_TIMEOUT_MS) and there is one retry, so it fails within a bound, as
// an upstream failure with the envelope.
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.ts';

describe('a Stripe API that never answers', () => {
  const sockets = new Set<Socket>();
  let silent: Server;
  let server: TestServer;
  let connections = 0;

  beforeAll(async () => {
    silent = createServer((socket) => {
      connections++;
      sockets.add(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    server = await startTestServer({
      env: {
        STRIPE_SECRET_KEY: 'sk_test_hang',
        STRIPE_WEBHOOK_SECRET: 'whsec_hang',
        STRIPE_API_BASE: `http://127.0.0.1:${port}`,
        STRIPE_TIMEOUT_MS: '300',
        STRIPE_PRICE_PRO: 'price_pro',
        ALLOWED_REDIRECT_ORIGINS: 'https://app.example',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent?.close(() => resolve()));
  });

  it('fails checkout with 502 after a bounded number of attempts', async () => {
    const user = await server.signUp();
    const answer = await user.client.POST('/v1/billing/checkout', {
      body: { plan_id: 'pro', success_url: 'https://app.example/ok', cancel_url: 'https://app.example/no' },
    });
    expect(answer.response.status).toBe(502);
    expect((answer.error as { error: { code: string } }).error.code).toBe('upstream_error');
    // The first call (the customer) is tried twice and gives up: no further calls.
    expect(connections).toBeLessThanOrEqual(2);
  });
});
