// Where signing out of the console takes an operator: to the operators' provider, which ends its
// own session there and sends the operator back to the console. Without this the provider's
// session outlives the console's tokens, and the next sign-in goes through without a password.
// No imports: console/test/signOut.test.mjs runs it under node's test runner.

/** The fields of the provider's discovery document that say where and how it signs out. */
export type SignOutMetadata = {
  issuer?: string;
  authorization_endpoint?: string;
  end_session_endpoint?: string;
};

export type SignOutRequest = {
  clientId: string;
  /** Where the provider sends the operator back: the console's base URL, its client's sign-out URL. */
  returnTo: string;
  idToken?: string;
};

// A Cognito user pool's issuer: https://cognito-idp.<region>.amazonaws.com/<pool id>.
const COGNITO_ISSUER = /^https:\/\/cognito-idp\.[a-z0-9-]+\.amazonaws\.com(\.cn)?\/[a-z0-9-]+_[0-9A-Za-z]+$/;

export function isCognitoIssuer(issuer: string | undefined): boolean {
  return COGNITO_ISSUER.test(issuer ?? '');
}

/**
 * The URL that ends the operator's session at the provider, or undefined when the provider names
 * no way to (the console then only forgets its own tokens).
 *
 * - Cognito takes its own parameters, not OpenID Connect's: `/logout` on the pool's domain (the
 *   one its authorization endpoint is on) with `client_id` and `logout_uri`, which must be one of
 *   the app client's sign-out URLs (template.yaml's `LogoutURLs`); it ignores
 *   `post_logout_redirect_uri`.
 *   https://docs.aws.amazon.com/cognito/latest/developerguide/logout-endpoint.html
 * - Any other provider: its `end_session_endpoint`, by OpenID Connect RP-Initiated Logout 1.0,
 *   with `id_token_hint`, `client_id` and `post_logout_redirect_uri`.
 *   https://openid.net/specs/openid-connect-rpinitiated-1_0.html
 */
export function signOutUrl(provider: SignOutMetadata, request: SignOutRequest): string | undefined {
  if (isCognitoIssuer(provider.issuer)) {
    if (!provider.authorization_endpoint) return undefined;
    const url = new URL('/logout', provider.authorization_endpoint);
    url.searchParams.set('client_id', request.clientId);
    url.searchParams.set('logout_uri', request.returnTo);
    return url.href;
  }
  if (!provider.end_session_endpoint) return undefined;
  const url = new URL(provider.end_session_endpoint);
  if (request.idToken) url.searchParams.set('id_token_hint', request.idToken);
  url.searchParams.set('client_id', request.clientId);
  url.searchParams.set('post_logout_redirect_uri', request.returnTo);
  return url.href;
}
