import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { LogLevel } from './config.ts';

/**
 * Structured JSON logs, to stdout unless another destination is given (tests capture them). Credentials
 * never reach them: request URLs are logged without query strings.
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
  return destination ? pino(options, destination) : pino(options);
}
