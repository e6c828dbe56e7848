// Node's `url.parse()` warning check, settled once for the process: each case runs in a fresh Node process,
// where nothing has called `url.parse()` yet, and reports the warnings it saw.
import { describe, expect, it } from 'vitest';
import { evalModule } from '../testing/processes.ts';

/** Runs `setUp` (module code) in a new Node process, then a call of `url.parse()` from outside node_modules. */
async function warningsAfter(setUp: string): Promise<string[]> {
  return evalModule<string[]>(`
    import url from 'node:url';
    const warnings = [];
    process.on('warning', (warning) => warnings.push(warning.code ?? warning.name));
    ${setUp}
    url.parse('/v1/agents?limit=1');
    setImmediate(() => console.log(JSON.stringify(warnings)));
  `);
}

describe('settleUrlParseWarning', () => {
  it('leaves nothing to check: a later call neither warns nor looks at its caller', async () => {
    // Without it, Node has not warned yet, so a call from outside node_modules warns (and every call checks).
    expect(await warningsAfter('')).toEqual(['DEP0169']);
    // With it, the warning counts as given, and settling printed nothing itself.
    expect(await warningsAfter(`(await import('./server/http/url-parse-warning.ts')).settleUrlParseWarning();`)).toEqual([]);
  });

  it('is settled wherever the app takes the validator', async () => {
    const setUp = `
      const { validatorFor } = await import('./server/app.ts');
      const { loadConfig } = await import('./server/config.ts');
      const { loadContract } = await import('./server/http/contract.ts');
      validatorFor(loadContract(), loadConfig({ NODE_ENV: 'test' }));
    `;
    expect(await warningsAfter(setUp)).toEqual([]);
  });
});
