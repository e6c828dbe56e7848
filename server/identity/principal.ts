// Who a request acts for, and what tells it from a credential.
export interface Principal {
  userId: string;
  credential: { kind: 'api_key' | 'session'; id: string };
}

export interface Authenticator {
  /** The principal behind a credential, or null when it is unknown, expired, revoked or forged. */
  authenticate(credential: string): Promise<Principal | null>;
}
