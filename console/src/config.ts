// The console's configuration, read at run time from /console/config.json (public/config.json),
// so one build serves every stage: `local` signs in through the local API's POST /local/ops-token;
// `oidc` (the operators' identity provider in AWS) is declared but not implemented yet.
// `businessTimeZone` (IANA, default Asia/Shanghai) names the stack's BUSINESS_TIME_ZONE: the
// business day the audit trail, trial balances and statements count in, and "today" of their
// day pickers.

export type ConsoleConfig = (
  | { signIn: 'local'; apiBase: string }
  | { signIn: 'oidc'; apiBase: string; authority: string; clientId: string }
) & { businessTimeZone: string };

export const DEFAULT_BUSINESS_TIME_ZONE = 'Asia/Shanghai';

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
    if (typeof raw.authority !== 'string' || typeof raw.clientId !== 'string') {
      throw new Error('config.json: signIn "oidc" needs authority and clientId');
    }
    return { signIn: 'oidc', apiBase, authority: raw.authority, clientId: raw.clientId, businessTimeZone };
  }
  if (raw.signIn !== 'local') throw new Error('config.json: signIn must be "local" or "oidc"');
  return { signIn: 'local', apiBase, businessTimeZone };
}
