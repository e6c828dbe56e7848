// The outbound address policy: user-given URLs do not reach private, loopback or link-local addresses,
// whether named literally, by a name that resolves there, or through a redirect, unless the operator
// allows them.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutboundPolicy } from './outbound.ts';

describe('the outbound address policy', () => {
  let target: Server;
  let port: number;
  beforeAll(async () => {
    target = createServer((req, res) => {
      if (req.url === '/hop') res.writeHead(302, { Location: `http://127.0.0.1:${port}/inside` }).end();
      else res.writeHead(200, { 'Content-Type': 'text/plain' }).end('inside');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    port = (target.address() as AddressInfo).port;
  });
  afterAll(() => target.close());

  const refusal = async (policy: ReturnType<typeof createOutboundPolicy>, url: string) => {
    try {
      await policy.fetch(url);
      return 'fetched';
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause;
      return (error as { code?: string }).code ?? cause?.code ?? String(error);
    }
  };

  it('refuses special addresses, literal or resolved, and names every kind', async () => {
    const policy = createOutboundPolicy();
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fc00::1', '::ffff:127.0.0.1', '::ffff:7f00:1']) {
      expect(policy.allowsAddress(address), address).toBe(false);
    }
    expect(policy.allowsAddress('93.184.216.34')).toBe(true);
    expect(policy.allowsAddress('2606:2800:220:1:248:1893:25c8:1946')).toBe(true);
    expect(await refusal(policy, `http://127.0.0.1:${port}/`)).toBe('EOUTBOUNDREFUSED');
    expect(await refusal(policy, `http://[::1]:${port}/`)).toBe('EOUTBOUNDREFUSED');
    expect(await refusal(policy, `http://[::ffff:127.0.0.1]:${port}/`)).toBe('EOUTBOUNDREFUSED');
    expect(await refusal(policy, `http://localhost:${port}/`)).toBe('EOUTBOUNDREFUSED');
    expect(await refusal(policy, 'file:///etc/passwd')).toBe('EOUTBOUNDREFUSED');
  });

  it('lets the operator allow addresses, ranges and names, and still checks where a redirect goes', async () => {
    expect(await (await createOutboundPolicy({ allow: ['127.0.0.1'] }).fetch(`http://127.0.0.1:${port}/`)).text()).toBe('inside');
    expect(await (await createOutboundPolicy({ allow: ['127.0.0.0/8'] }).fetch(`http://127.0.0.1:${port}/hop`)).text()).toBe('inside');
    expect(await (await createOutboundPolicy({ allow: ['localhost'] }).fetch(`http://localhost:${port}/`)).text()).toBe('inside');
    // The name is allowed, the address it redirects to is not.
    expect(await refusal(createOutboundPolicy({ allow: ['localhost'] }), `http://localhost:${port}/hop`)).toBe('EOUTBOUNDREFUSED');
  });
});
