// Requests to addresses users give us (audio URLs, MCP servers, A2A push receivers) must not reach the
// server's own network: private, loopback, link-local and other special addresses are refused unless the
// operator's allow-list (OUTBOUND_ALLOW) names them. The check sits in the connection itself, on the
// address a name resolved to, so a name that resolves differently the second time (DNS rebinding) and a
// redirect to an internal address are refused too.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { createHttpFetch } from '../models/http-fetch.ts';

/** Ranges no user-given URL may reach by default (RFC 6890 special-purpose and private addresses). */
const SPECIAL_V4 = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const;
const SPECIAL_V6 = [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const;

/** The IPv4 address an IPv4-mapped IPv6 address stands for (`::ffff:127.0.0.1` or `::ffff:7f00:1`). */
function mappedIpv4(address: string): string | undefined {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (dotted) return dotted;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

export class OutboundRefused extends Error {
  readonly code = 'EOUTBOUNDREFUSED';
}

export interface OutboundPolicy {
  /** Throws OutboundRefused when the URL may not be called (its scheme, or a literal address). */
  check(url: string | URL): URL;
  /** Whether an address may be connected to. */
  allowsAddress(address: string): boolean;
  /** A fetch that refuses what the policy refuses, on every redirect and every resolution. */
  fetch: typeof fetch;
  httpAgent: http.Agent;
  httpsAgent: https.Agent;
}

/**
 * `allow`: host names (exact, case-insensitive), addresses and CIDR ranges (`10.0.0.0/8`, `::1`) that may
 * be reached although they are special.
 */
export function createOutboundPolicy(options: { allow?: readonly string[] } = {}): OutboundPolicy {
  const special = new net.BlockList();
  for (const [address, prefix] of SPECIAL_V4) special.addSubnet(address, prefix, 'ipv4');
  for (const [address, prefix] of SPECIAL_V6) special.addSubnet(address, prefix, 'ipv6');
  const allowed = new net.BlockList();
  const allowedHosts = new Set<string>();
  for (const entry of options.allow ?? []) {
    const value = entry.trim();
    if (!value) continue;
    const [address, prefix] = value.split('/');
    const family = net.isIP(address!);
    if (family === 0) allowedHosts.add(value.toLowerCase());
    else if (prefix !== undefined) allowed.addSubnet(address!, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
    else allowed.addAddress(address!, family === 4 ? 'ipv4' : 'ipv6');
  }

  function allowsAddress(address: string): boolean {
    const family = net.isIP(address);
    if (family === 0) return false;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (allowed.check(address, type)) return true;
    // An IPv4-mapped IPv6 address is the IPv4 address it maps (Node's BlockList would match a mapped range
    // against every IPv4 address, so the mapping is undone here instead).
    const mapped = mappedIpv4(address);
    if (mapped) return allowsAddress(mapped);
    return !special.check(address, type);
  }

  function refuse(host: string, address?: string): OutboundRefused {
    return new OutboundRefused(
      `${host}${address && address !== host ? ` (${address})` : ''} is a private, loopback or otherwise internal address; an operator can allow it with OUTBOUND_ALLOW.`,
    );
  }

  const lookup: net.LookupFunction = (hostname, lookupOptions, callback) => {
    if (allowedHosts.has(hostname.toLowerCase())) {
      dns.lookup(hostname, lookupOptions, callback);
      return;
    }
    dns.lookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as dns.LookupAddress[];
      const bad = list.find((entry) => !allowsAddress(entry.address));
      if (bad) return callback(refuse(hostname, bad.address), '', 0);
      if (lookupOptions.all) return callback(null, list as never, 0);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };

  /** A literal address in a URL is never looked up: it is checked where the connection is made. */
  function guardLiteral(host: string | null | undefined): void {
    const bare = (host ?? '').replace(/^\[|\]$/g, '');
    if (net.isIP(bare) && !allowsAddress(bare)) throw refuse(bare);
  }

  class GuardedHttpAgent extends http.Agent {
    override createConnection(connectOptions: net.NetConnectOpts, callback?: (error: Error | null, socket: Duplex) => void): Duplex {
      guardLiteral((connectOptions as net.TcpNetConnectOpts).host);
      return super.createConnection(connectOptions, callback) as Duplex;
    }
  }
  class GuardedHttpsAgent extends https.Agent {
    override createConnection(connectOptions: net.NetConnectOpts, callback?: (error: Error | null, socket: Duplex) => void): Duplex {
      guardLiteral((connectOptions as net.TcpNetConnectOpts).host);
      return super.createConnection(connectOptions, callback) as Duplex;
    }
  }
  const httpAgent = new GuardedHttpAgent({ keepAlive: true, timeout: 4_000, lookup });
  const httpsAgent = new GuardedHttpsAgent({ keepAlive: true, timeout: 4_000, lookup });

  function check(url: string | URL): URL {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new OutboundRefused(`Only http and https URLs can be called, not ${parsed.protocol}`);
    if (!allowedHosts.has(parsed.hostname.toLowerCase())) guardLiteral(parsed.hostname);
    return parsed;
  }

  const guardedFetch = createHttpFetch({
    httpAgent,
    httpsAgent,
    // What the relay cannot send itself (streamed bodies, other redirect modes) would bypass the guard.
    fallback: () => Promise.reject(new TypeError('fetch failed', { cause: new OutboundRefused('This kind of request cannot be sent to a user-given address.') })),
  });

  return {
    check,
    allowsAddress,
    httpAgent,
    httpsAgent,
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      if (typeof input === 'string' || input instanceof URL) check(input);
      return guardedFetch(input, init);
    }) as typeof fetch,
  };
}
