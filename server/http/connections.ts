// Connections that open and never send a request. Node's own limits (headersTimeout, requestTimeout,
// keepAliveTimeout) are checked only for a connection with a request under way or just answered, so a
// socket that stays silent from the start is held until the client goes away: thousands of them cost file
// descriptors and memory for nothing. Each new connection gets a deadline for its first request's headers;
// once a request arrives, Node's limits take over, so a long blocking chat or a quiet event stream is never
// cut by this one. The deadline is cleared on the server's 'request' event rather than on the socket's
// first byte, which leaves the socket's data path to the HTTP parser alone.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

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
