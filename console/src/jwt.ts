/** The claims of a JWT, unverified (the server verifies it): for what the console shows and when it expires. */
export function claimsOf(token: string): Record<string, unknown> | undefined {
  try {
    const payload = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const text = new TextDecoder().decode(Uint8Array.from(atob(payload), (c) => c.charCodeAt(0)));
    const claims = JSON.parse(text) as unknown;
    return claims && typeof claims === 'object' ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The `exp` claim of a JWT (seconds), if it can be read. */
export function expiry(token: string): number | undefined {
  const exp = claimsOf(token)?.exp;
  return typeof exp === 'number' ? exp : undefined;
}

/** Whether a JWT is unexpired (one without a readable `exp` is left to the server). */
export function unexpired(token: string): boolean {
  const exp = expiry(token);
  return exp === undefined || exp * 1000 > Date.now();
}
