// Log lines are batched per turn of the event loop: one write for the turn, in order, and nothing left
// behind at exit.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger, LinesPerTurn } from './logger.ts';
import { evalModule } from './testing/processes.ts';

function sink() {
  const writes: string[] = [];
  return { writes, lines: new LinesPerTurn({ write: (text: string) => writes.push(text) }) };
}

describe('LinesPerTurn', () => {
  it('writes the lines of one turn together once the turn ends, in order', async () => {
    const { writes, lines } = sink();
    const logger = createLogger('info', lines);
    logger.info('one');
    logger.warn({ n: 2 }, 'two');
    logger.info('three');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toHaveLength(1);
    expect(writes[0]!.trimEnd().split('\n').map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['one', 'two', 'three']);
    logger.info('four');
    await nextTurn();
    expect(writes).toHaveLength(2);
    expect(writes[1]).toContain('"msg":"four"');
  });

  it('writes what is pending on flushSync and on logger.flush, and nothing twice', async () => {
    const { writes, lines } = sink();
    const logger = createLogger('info', lines);
    logger.info('pending');
    lines.flushSync();
    expect(writes).toHaveLength(1);
    logger.info('flushed');
    const flushed = new Promise<void>((resolve) => logger.flush(() => resolve()));
    await flushed;
    expect(writes).toHaveLength(2);
    await nextTurn();
    expect(writes).toHaveLength(2);
    expect(writes.join('')).toMatch(/"msg":"pending".*\n.*"msg":"flushed"/);
  });

  it('writes the last lines of a process that exits in the same turn it logged them', async () => {
    const last = await evalModule<{ msg: string }>(
      `const { createLogger } = await import('./server/logger.ts');
       const logger = createLogger('info');
       logger.info('first');
       logger.info('stopped');
       process.exit(0);`,
    );
    expect(last.msg).toBe('stopped');
  });
});
