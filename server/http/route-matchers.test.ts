// The validator's compiled route matchers are kept, and match what compiling them afresh matches.
import { describe, expect, it } from 'vitest';
import { cacheValidatorRouteMatchers, validatorPathToRegexp } from './route-matchers.ts';

describe('cacheValidatorRouteMatchers', () => {
  it('compiles each route once per set of options, and matches as before', () => {
    const compiled: unknown[] = [];
    const module = {
      pathToRegexp(path: unknown, options?: Record<string, unknown>) {
        compiled.push(path);
        return validatorPathToRegexp().pathToRegexp(path, options);
      },
    };
    cacheValidatorRouteMatchers(module);
    cacheValidatorRouteMatchers(module);

    const first = module.pathToRegexp('/v1/agents/:agent_id', { sensitive: false, strict: false });
    const again = module.pathToRegexp('/v1/agents/:agent_id', { sensitive: false, strict: false });
    expect(again).toBe(first);
    expect(first.regexp.exec('/v1/agents/agt_1')?.[1]).toBe('agt_1');
    expect(first.regexp.exec('/v1/agents')).toBeNull();
    expect(first.regexp.exec('/V1/AGENTS/agt_1')).not.toBeNull();

    const sensitive = module.pathToRegexp('/v1/agents/:agent_id', { sensitive: true, strict: false });
    expect(sensitive).not.toBe(first);
    expect(sensitive.regexp.exec('/V1/AGENTS/agt_1')).toBeNull();
    expect(compiled).toEqual(['/v1/agents/:agent_id', '/v1/agents/:agent_id']);

    // Options it does not know, and routes that are not strings, are compiled every time.
    module.pathToRegexp('/v1/teams', { delimiter: '.' });
    module.pathToRegexp('/v1/teams', { delimiter: '.' });
    expect(compiled).toHaveLength(4);
  });

  it('is installed on the path-to-regexp module the validator loads', () => {
    const module = validatorPathToRegexp();
    cacheValidatorRouteMatchers();
    expect(module.pathToRegexp('/v1/models/:model', {})).toBe(module.pathToRegexp('/v1/models/:model', {}));
  });
});
