import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { LogLevel } from './config.ts';

/** Where a batch of lines goes: pino's synchronous stdout, or a test's sink. */
interface LineSink {
  write(text: string): unknown;
}

/**
 * Lines logged during one turn of the event loop, written together when the turn ends (`setImmediate`):
 * under load a turn serves many requests, and each write to stdout is a system call of its own. Each
 * batch is written synchronously, so nothing waits in a buffer past the turn, and at exit what is
 * pending is written before the process goes (`flushSync`); only a process killed outright loses the
 * lines of the turn it was in.
 */
export class LinesPerTurn implements DestinationStream {
  #pending = '';
  #scheduled = false;
  readonly #sink: LineSink;

  constructor(sink: LineSink) {
    this.#sink = sink;
  }

  write(line: string): void {
    this.#pending += line;
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#endOfTurn);
  }

  readonly #endOfTurn = () => {
    this.#scheduled = false;
    this.flushSync();
  };

  flushSync(): void {
    if (this.#pending === '') return;
    const text = this.#pending;
    this.#pending = '';
    this.#sink.write(text);
  }

  /** pino's `logger.flush(cb)`. */
  flush(done?: (error?: Error) => void): void {
    this.flushSync();
    done?.();
  }
}

let stdoutLines: LinesPerTurn | undefined;

/**
 * Stdout is written synchronously, as Node writes its own stdout to pipes and files, one batch per turn
 * of the event loop. pino's default buffers asynchronously and flushes at exit in a loop that retries
 * every failed write, so once stdout's reader had gone (EPIPE) a server that logged a line just before
 * exiting never exited. A broken pipe now just stops the log (pino's destination drops what follows).
 * One batcher serves every logger of the process, with one exit hook.
 */
function stdout(): LinesPerTurn {
  if (stdoutLines) return stdoutLines;
  const lines = new LinesPerTurn(pino.destination({ dest: 1, sync: true }));
  process.on('exit', () => lines.flushSync());
  stdoutLines = lines;
  return lines;
}

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
  return pino(options, destination ?? stdout());
}
