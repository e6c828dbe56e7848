// Writes an async iterable of events as text/event-stream: backpressure, keep-alive comments, and, where
// configured, a check of every payload against the contract before it leaves.
import { once } from 'node:events';
import type { Response } from 'express';
import type { Logger } from 'pino';
import type { SseFrame } from '../../generated/server.gen.ts';
import type { StreamValidator } from './contract.ts';

export interface EventStreamOptions {
  keepAliveMs: number;
  /** A last `data:` line after the events, e.g. `[DONE]` for OpenAI-style streams. */
  terminator?: string;
  validate?: StreamValidator;
  log: Logger;
  /** Counts the streams open now. */
  openStreams?: { inc(): void; dec(): void };
}

export class ContractViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContractViolation';
  }
}

/**
 * Thrown by a stream after its last frame (an error event) when the answer it carried is incomplete: the
 * stream then ends cleanly but without its terminator, so that no client takes the cut answer for a whole
 * one (OpenAI's clients treat `[DONE]` as the end of a complete answer).
 */
export class IncompleteStream extends Error {
  constructor() {
    super('The stream ended before its answer was complete.');
    this.name = 'IncompleteStream';
  }
}

/**
 * An event's JSON payload already written out (an upstream's chunk relayed as it came): sent as it is.
 * Where it is kept or checked as a value (an idempotent answer, the contract check) it is parsed.
 */
export class SerializedJson {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

export function formatFrame(frame: SseFrame<unknown>): string {
  let text = '';
  if (frame.id !== undefined) text += `id: ${frame.id}\n`;
  if (frame.event !== undefined) text += `event: ${frame.event}\n`;
  // Serialised JSON has no raw newline: one data line.
  if (frame.data instanceof SerializedJson) return `${text}data: ${frame.data.text}\n\n`;
  const data = typeof frame.data === 'string' ? frame.data : JSON.stringify(frame.data);
  // JSON never contains a raw newline, but a plain string payload might; each line needs its own prefix.
  for (const line of data.split('\n')) text += `data: ${line}\n`;
  return text + '\n';
}

/**
 * Streams `frames` to the client. Resolves when the stream ended, normally or because the client went
 * away (the iterator is then closed, so its `finally` blocks run). A payload off the contract ends the
 * stream abruptly, so that tests cannot miss it.
 */
export async function writeEventStream(
  res: Response,
  status: number,
  frames: AsyncIterable<SseFrame<unknown>>,
  options: EventStreamOptions,
): Promise<void> {
  res.status(status);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const openStreams = options.openStreams;
  if (openStreams) {
    openStreams.inc();
    // The connection's end, not the loop's: a client that left is gone before the next frame shows it.
    res.once('close', () => openStreams.dec());
  }

  let lastWrite = Date.now();
  const keepAlive = setInterval(() => {
    if (Date.now() - lastWrite >= options.keepAliveMs && !res.writableEnded) {
      res.write(': keep-alive\n\n');
      lastWrite = Date.now();
    }
  }, Math.max(250, Math.floor(options.keepAliveMs / 2)));
  keepAlive.unref();

  const write = async (text: string): Promise<void> => {
    lastWrite = Date.now();
    if (!res.write(text)) {
      await Promise.race([once(res, 'drain'), once(res, 'close')]);
    }
  };

  try {
    for await (const frame of frames) {
      if (res.destroyed || res.writableEnded) break;
      if (options.validate) {
        const problem = options.validate(frame.data instanceof SerializedJson ? frame.data.toJSON() : frame.data);
        if (problem) throw new ContractViolation(`Event off the contract: ${problem}`);
      }
      await write(formatFrame(frame));
    }
    if (options.terminator && !res.destroyed) await write(`data: ${options.terminator}\n\n`);
    res.end();
  } catch (error) {
    if (error instanceof IncompleteStream) {
      res.end();
      return;
    }
    options.log.error({ err: error }, 'event stream failed');
    res.destroy();
  } finally {
    clearInterval(keepAlive);
  }
}
