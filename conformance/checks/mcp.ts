// The MCP endpoint (/mcp, Streamable HTTP) and its protected resource metadata: a 2025-era client's
// handshake and tool list, a notification, the 401 challenge naming the metadata, a request off the
// contract answered as a JSON-RPC error, and GET and DELETE as a server without sessions answers them. The official MCP conformance kit checks the
// protocol in depth; this checks that /mcp is the operation the contract describes.
import type { Exchange } from '../http.ts';
import type { Check, Schemas } from '../context.ts';

type Message = Schemas['McpJsonRpcMessage'];

const ACCEPT = 'application/json, text/event-stream';
const VERSION = '2025-11-25';

/** The JSON-RPC response with `id` in an answer, JSON or a stream of messages. */
function responseOf(answer: Exchange, id: number): Message | undefined {
  const messages = answer.events ? answer.events.map((event) => event.json as Message) : [answer.json as Message];
  return messages.find((message) => message && 'id' in message && message.id === id && ('result' in message || 'error' in message));
}

export const mcpChecks: Check[] = [
  {
    name: 'MCP protected resource metadata',
    operations: ['getProtectedResourceMetadata', 'getMcpProtectedResourceMetadata'],
    async run(t) {
      for (const id of ['getProtectedResourceMetadata', 'getMcpProtectedResourceMetadata'] as const) {
        if (!t.selected(id)) continue;
        const answer = (await t.call(id, { as: 'none', expect: 200, halt: false })).json as Schemas['ProtectedResourceMetadata'] | undefined;
        t.check(id, typeof answer?.resource === 'string' && /\/mcp$/.test(answer.resource), `the metadata names resource ${answer?.resource}, not the /mcp endpoint`);
        t.check(id, (answer?.authorization_servers ?? []).length > 0, 'the metadata names no authorization server');
      }
    },
  },
  {
    name: 'MCP endpoint',
    operations: ['sendMcpMessage', 'openMcpStream', 'deleteMcpSession'],
    async run(t) {
      const id = 'sendMcpMessage';
      if (t.selected(id)) {
        const headers = { 'MCP-Protocol-Version': VERSION };
        const hello = await t.call(id, {
          accept: ACCEPT,
          body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'conformance', version: '1.0.0' } } },
          expect: 200,
        });
        const initialized = responseOf(hello, 1) as { result?: { protocolVersion?: string; capabilities?: { tools?: unknown } } } | undefined;
        t.require(id, typeof initialized?.result?.protocolVersion === 'string', 'initialize was not answered with a protocol version');
        t.check(id, initialized?.result?.capabilities?.tools !== undefined, 'initialize does not say the server has tools');
        await t.call(id, { accept: ACCEPT, headers, body: { jsonrpc: '2.0', method: 'notifications/initialized' }, expect: 202, halt: false });
        const listed = responseOf(await t.call(id, { accept: ACCEPT, headers, body: { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, expect: 200 }), 2) as
          | { result?: { tools?: { name?: string }[] } }
          | undefined;
        const names = (listed?.result?.tools ?? []).map((tool) => tool.name);
        t.check(id, ['list_agents', 'get_run', 'knowledge_search'].every((name) => names.includes(name)), `tools/list names ${names.join(', ')}, without list_agents, get_run and knowledge_search`);
        // Without a credential: 401, and a challenge naming the metadata a client finds its authorization server in.
        const anonymous = await t.call(id, { as: 'none', accept: ACCEPT, headers, body: { jsonrpc: '2.0', id: 4, method: 'ping' }, expect: 401, halt: false, probe: true });
        const metadataUrl = /resource_metadata="([^"]+)"/.exec(anonymous.headers.get('www-authenticate') ?? '')?.[1];
        t.check(id, metadataUrl !== undefined, `401 challenges with "${anonymous.headers.get('www-authenticate')}", naming no resource_metadata`);
        if (metadataUrl) {
          // Asked of the server under test by its path: its public address may not be reachable from here.
          const metadata = await t.client.raw('GET', new URL(metadataUrl).pathname);
          t.check(id, metadata.status === 200, `the resource metadata the challenge names (${metadataUrl}) answered ${metadata.status}`);
        }
        const invalid = await t.call(id, { accept: ACCEPT, headers, body: { jsonrpc: '2.0', id: 3 }, expect: 400, halt: false });
        const error = invalid.json as Schemas['McpJsonRpcErrorResponse'] | undefined;
        t.check(id, error?.error?.code === -32600 && error.id === 3, `a message that is neither request nor response answered ${invalid.text.slice(0, 200)}, not a -32600 error for id 3`);
      }
      for (const method of ['openMcpStream', 'deleteMcpSession'] as const) {
        if (!t.selected(method)) continue;
        const refused = await t.call(method, { accept: 'text/event-stream', headers: { 'MCP-Protocol-Version': VERSION }, expect: 405, halt: false });
        t.check(method, (refused.headers.get('allow') ?? '').includes('POST'), `405 names Allow "${refused.headers.get('allow')}", not POST`);
      }
    },
  },
];
