// The loopback OpenAI upstream for benchmarks, as its own process so that it does not share an event loop
// with the server or the load generator. Prints `{"url": …}` once listening; runs until killed.
//   node bench/upstream.ts [--chunk-gap-ms 2] [--models gpt-bench]
import { parseArgs } from 'node:util';
import { startFakeOpenAI } from '../server/testing/fake-openai.ts';

const { values } = parseArgs({
  options: {
    'chunk-gap-ms': { type: 'string', default: '0' },
    models: { type: 'string', default: 'gpt-bench' },
  },
});
const upstream = await startFakeOpenAI({ models: values.models.split(','), chunkGapMs: Number(values['chunk-gap-ms']), keepRequests: false });
console.log(JSON.stringify({ url: upstream.url }));
process.on('SIGTERM', () => void upstream.close().then(() => process.exit(0)));
