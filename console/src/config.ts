// The console's configuration, read at run time from /console/config.json (public/config.json),
// so one build serves every stage: `local` signs in through the local API's POST /local/ops-token;
// `oidc` (the operators' identity provider in AWS) is declared but not implemented yet.

export type ConsoleConfig =
  | { signIn: 'local'; apiBase: string }
  | { signIn: 'oidc'; apiBase: string; authority: string; clientId: string };

export async function loadConfig(): Promise<ConsoleConfig> {
  const response = await fetch(`${import.meta.env.BASE_URL}config.json`, { cache: 'no-store' });
  if (!response.ok) throw new Error(`config.json: HTTP ${response.status}`);
  const raw = (await response.json()) as Record<string, unknown>;
  const apiBase = typeof raw.apiBase === 'string' ? raw.apiBase.replace(/\/+$/, '') : '';
  if (raw.signIn === 'oidc') {
    if (typeof raw.authority !== 'string' || typeof raw.clientId !== 'string') {
      throw new Error('config.json: signIn "oidc" needs authority and clientId');
    }
    return { signIn: 'oidc', apiBase, authority: raw.authority, clientId: raw.clientId };
  }
  if (raw.signIn !== 'local') throw new Error('config.json: signIn must be "local" or "oidc"');
  return { signIn: 'local', apiBase };
}
