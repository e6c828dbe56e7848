// Connections that open and never send a request. Node's own limits (headersTimeout, requestTimeout,
// keepAliveTimeout) start with a request's first byte or end with a response, so a socket that stays
// silent from the start is held until the client goes away: thousands of them cost file descriptors and
// memory for nothing. Each new connection gets a deadline for its first byte; once it speaks, Node's
// limits take over, so a long blocking chat or a quiet event stream is never cut by this one.
import type { Server } from 'node:http';

export function dropSilentConnections(server: Server, timeoutMs: number): void {
  server.on('connection', (socket) => {
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    timer.unref();
    const spoke = () => clearTimeout(timer);
    socket.once('data', spoke);
    socket.once('close', spoke);
  });
}
