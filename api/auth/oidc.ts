/**
 * Google sign-in over OpenID Connect (authorization code + PKCE + nonce) with
 * openid-client. Discovery runs on first use and is cached; a failed discovery is not
 * cached, so a provider outage at start-up heals by itself.
 */

import * as oidc from 'openid-client';

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  /** Test-only (a local provider over plain http); never set from config or env. */
  allowInsecureRequests?: boolean;
}

export interface PendingSignIn {
  codeVerifier: string;
  state: string;
  nonce: string;
}

export interface OidcIdentity {
  subject: string;
  email?: string;
  /** The ID token's `email_verified` is true (absent counts as not verified). */
  emailVerified: boolean;
  name?: string;
}

export class OidcClient {
  readonly #settings: OidcSettings;
  #config: Promise<oidc.Configuration> | undefined;

  constructor(settings: OidcSettings) {
    this.#settings = settings;
  }

  #configuration(): Promise<oidc.Configuration> {
    const s = this.#settings;
    this.#config ??= oidc
      .discovery(
        new URL(s.issuer),
        s.clientId,
        s.clientSecret,
        undefined,
        s.allowInsecureRequests ? { execute: [oidc.allowInsecureRequests] } : undefined,
      )
      .catch((err: unknown) => {
        this.#config = undefined;
        throw err;
      });
    return this.#config;
  }

  async start(): Promise<{ url: string; pending: PendingSignIn }> {
    const config = await this.#configuration();
    const pending = {
      codeVerifier: oidc.randomPKCECodeVerifier(),
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
    };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.#settings.redirectUri,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(pending.codeVerifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { url: url.href, pending };
  }

  /**
   * Exchanges the code from the callback's `query` and checks state, nonce, PKCE and the
   * ID token. The callback URL is rebuilt on our configured redirect URI, never from the
   * request's Host header: openid-client sends it as `redirect_uri`.
   */
  async finish(query: string, pending: PendingSignIn): Promise<OidcIdentity> {
    const config = await this.#configuration();
    const callbackUrl = new URL(this.#settings.redirectUri);
    callbackUrl.search = query;
    const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims) throw new Error('no ID token claims');
    const identity: OidcIdentity = { subject: claims.sub, emailVerified: claims.email_verified === true };
    if (typeof claims.email === 'string') identity.email = claims.email;
    if (typeof claims.name === 'string') identity.name = claims.name;
    return identity;
  }
}
