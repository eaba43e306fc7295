// The console's configuration, read at run time from /console/config.json (public/config.json),
// so one build serves every stage: `local` signs in through the local API's POST /local/ops-token;
// `oidc` through the operators' identity provider in AWS (an OIDC issuer: the company's SSO or the
// stack's Cognito pool), `authority` its issuer, `clientId` the console's client (no secret: the
// authorization code flow with PKCE), `rolesClaim` the ID token's claim of the operator's roles
// (default cognito:groups, as the API's operators' authorizer reads them).
// `businessTimeZone` (IANA, default Asia/Shanghai) names the stack's BUSINESS_TIME_ZONE: the
// business day the audit trail, trial balances and statements count in, and "today" of their
// day pickers.

export type ConsoleConfig = (
  | { signIn: 'local'; apiBase: string }
  | { signIn: 'oidc'; apiBase: string; authority: string; clientId: string; rolesClaim: string }
) & { businessTimeZone: string };

export type OidcConfig = Extract<ConsoleConfig, { signIn: 'oidc' }>;

export const DEFAULT_BUSINESS_TIME_ZONE = 'Asia/Shanghai';
export const DEFAULT_ROLES_CLAIM = 'cognito:groups';

function timeZone(raw: unknown): string {
  if (raw === undefined || raw === null || raw === '') return DEFAULT_BUSINESS_TIME_ZONE;
  if (typeof raw !== 'string') throw new Error('config.json: businessTimeZone must be an IANA time zone');
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: raw });
  } catch {
    throw new Error(`config.json: businessTimeZone ${JSON.stringify(raw)} is not an IANA time zone`);
  }
  return raw;
}

export async function loadConfig(): Promise<ConsoleConfig> {
  const response = await fetch(`${import.meta.env.BASE_URL}config.json`, { cache: 'no-store' });
  if (!response.ok) throw new Error(`config.json: HTTP ${response.status}`);
  const raw = (await response.json()) as Record<string, unknown>;
  const apiBase = typeof raw.apiBase === 'string' ? raw.apiBase.replace(/\/+$/, '') : '';
  const businessTimeZone = timeZone(raw.businessTimeZone);
  if (raw.signIn === 'oidc') {
    if (typeof raw.authority !== 'string' || !raw.authority || typeof raw.clientId !== 'string' || !raw.clientId) {
      throw new Error('config.json: signIn "oidc" needs authority and clientId');
    }
    if (raw.rolesClaim !== undefined && (typeof raw.rolesClaim !== 'string' || !raw.rolesClaim)) {
      throw new Error('config.json: rolesClaim must be the name of a claim');
    }
    const rolesClaim = (raw.rolesClaim as string | undefined) ?? DEFAULT_ROLES_CLAIM;
    return { signIn: 'oidc', apiBase, authority: raw.authority, clientId: raw.clientId, rolesClaim, businessTimeZone };
  }
  if (raw.signIn !== 'local') throw new Error('config.json: signIn must be "local" or "oidc"');
  return { signIn: 'local', apiBase, businessTimeZone };
}
