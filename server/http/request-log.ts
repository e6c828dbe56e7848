// One log line per request, in the shape pino-http wrote it (`req`, `res`, `responseTime`, "request
// completed" / "request aborted" / "request errored"), and `req.log`: a child logger bound to the request.
// pino-http made that child for every request up front; most requests never log anything but the final
// line, and a child costs more than the rest of this, so it is made on first use. The request is logged
// by id, method and path: never its headers or query string, which may carry credentials.
import type { Express, Request, RequestHandler } from 'express';
import type { Logger } from 'pino';

interface RequestBindings {
  id: string;
  method: string;
  path: string;
}

const bindingsKey = Symbol('requestLogBindings');
const loggerKey = Symbol('requestLogger');

type LoggedRequest = Request & { [bindingsKey]?: RequestBindings; [loggerKey]?: Logger };

function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** Installs `req.log` on `app`'s requests and returns the middleware that logs each one when it ends. */
export function requestLog(app: Express, logger: Logger): RequestHandler {
  const bindingsOf = (req: LoggedRequest): RequestBindings =>
    (req[bindingsKey] ??= { id: req.id, method: req.method, path: pathOf(req.originalUrl ?? req.url) });
  // On the app's request prototype, so that each request pays for a child logger only if it logs.
  Object.defineProperty(app.request, 'log', {
    configurable: true,
    get(this: LoggedRequest): Logger {
      return (this[loggerKey] ??= logger.child({ req: bindingsOf(this) }));
    },
    set(this: LoggedRequest, value: Logger) {
      this[loggerKey] = value;
    },
  });

  // The lines below hold only the request's id, method and path, its status and time, so they skip the
  // redaction the logger applies to everything else (it looks into every field of every line); a failed
  // request's line carries its error and goes through it.
  const unredacted = logger.child({}, { redact: [] });
  return (req, res, next) => {
    const start = Date.now();
    const bindings = bindingsOf(req);
    let logged = false;
    const log = (error?: Error) => {
      if (logged) return;
      logged = true;
      const responseTime = Date.now() - start;
      if (error || res.statusCode >= 500) {
        const err = error ?? new Error(`failed with status code ${res.statusCode}`);
        logger.info({ req: bindings, res: { status: res.statusCode }, err, responseTime }, 'request errored');
        return;
      }
      const message = !req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted';
      unredacted.info({ req: bindings, res: { status: res.statusCode }, responseTime }, message);
    };
    // 'close' follows 'finish', and also comes when the client leaves first. Listening for 'error' keeps
    // a late write on a finished response from becoming an uncaught exception.
    res.on('close', () => log());
    res.on('error', log);
    next();
  };
}

declare module 'express-serve-static-core' {
  interface Request {
    /** A logger bound to this request (its id, method and path). */
    log: Logger;
  }
}
