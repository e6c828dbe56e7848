import type { Authenticator } from './principal.ts';
import { isApiKey, type ApiKeyStore } from './api-keys.ts';
import type { SessionStore } from './sessions.ts';

/** API keys by their `oaa_` prefix; anything else is tried as a session access token. */
export function createAuthenticator(apiKeys: ApiKeyStore, sessions: SessionStore): Authenticator {
  return {
    authenticate(credential) {
      return isApiKey(credential) ? apiKeys.authenticate(credential) : sessions.authenticate(credential);
    },
  };
}
