// Connections that open and never send a request. Node's own limits (headersTimeout, requestTimeout,
// keepAliveTimeout) are checked only for a connection with a request under way or just answered, so a
// socket that stays silent from the start is held until the client goes away: thousands of them cost file
// descriptors and memory for nothing. Each new connection gets a deadline for its first request's headers;
// once a request arrives, Node's limits take over, so a long blocking chat or a quiet event stream is never
// cut by this one. The deadline is cleared on the server's 'request' event rather than on the socket's
// first byte, which leaves the socket's data path to the HTTP parser alone.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError } from '../errors.ts';
import { envelope } from './errors.ts';

export function dropSilentConnections(server: Server, timeoutMs: number): void {
  const deadlines = new WeakMap<Socket, NodeJS.Timeout>();
  const clear = (socket: Socket) => {
    const timer = deadlines.get(socket);
    if (timer === undefined) return;
    clearTimeout(timer);
    deadlines.delete(socket);
  };
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    timer.unref();
    deadlines.set(socket, timer);
    socket.once('close', () => clear(socket));
  });
  server.on('request', (req: { socket: Socket }) => clear(req.socket));
}

/** The parts of an error Node's HTTP parser reports. */
interface ClientError extends Error {
  code?: string;
}

/**
 * Requests Node refuses before any handler sees them (headers past the 16 KB limit, a request line that
 * does not parse, headers that never finish) get the error envelope, as every other refusal does, rather
 * than Node's bare status line. A socket that already carries a response, or cannot be written, is closed.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: ClientError, socket: Socket) => {
    const busy = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (error.code === 'ECONNRESET' || busy || !socket.writable) {
      socket.destroy();
      return;
    }
    const code = error.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'invalid_request';
    const refusal = new ApiError(code, code === 'invalid_request' ? 'The request is not well-formed HTTP.' : undefined);
    const body = JSON.stringify(envelope(refusal, `req_${randomUUID().replaceAll('-', '')}`));
    const head = [
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  });
}

/** What main and the test harness put on every server that serves the app. */
export function guardConnections(server: Server, options: { silentConnectionTimeoutMs: number }): void {
  dropSilentConnections(server, options.silentConnectionTimeoutMs);
  answerClientErrors(server);
}
