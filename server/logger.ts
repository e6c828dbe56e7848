import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { LogLevel } from './config.ts';

/**
 * Structured JSON logs, to stdout unless another destination is given (tests capture them). Credentials
 * never reach them: request URLs are logged without query strings.
 *
 * Stdout is written synchronously, as Node writes its own stdout to pipes and files: a line is out
 * when the call returns, so nothing is left to flush at exit. pino's default buffers asynchronously and
 * flushes at exit in a loop that retries every failed write, so once stdout's reader had gone (EPIPE) a
 * server that logged a line just before exiting never exited. A broken pipe now just stops the log.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: undefined,
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie', '*.apiKey', '*.secret'],
      censor: '[redacted]',
    },
  } satisfies LoggerOptions;
  return pino(options, destination ?? pino.destination({ dest: 1, sync: true }));
}
