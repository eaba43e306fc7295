// The app's configuration, read at start from /app/config.json (public/config.json), so that one
// build serves every stage:
//   apiUrl  the API's base URL; "" for the app's own origin (the local API serving /app/, or a
//           CloudFront distribution routing the API's paths beside the app's files)
//   sharedUrl  where packets' shared views are polled (GET /packets/{id}/shared, no token): the
//           stack's SharedViewsUrl (CloudFront); absent or "" for apiUrl (as `make run` serves them)
//   signIn  "local": the stand-in sign-in page of the local API (POST /local/app-token and
//           POST /local/membership-ticket); "host": the host app gives the token and the
//           membership tickets through window.RedPacketsHost (src/session.ts).

export interface AppConfig {
  apiUrl: string;
  sharedUrl: string;
  signIn: 'local' | 'host';
}

export async function loadConfig(): Promise<AppConfig> {
  const response = await fetch(`${import.meta.env.BASE_URL}config.json`, { cache: 'no-store' });
  if (!response.ok) throw new Error(`config.json: HTTP ${response.status}`);
  const raw = (await response.json()) as Record<string, unknown>;
  const given = typeof raw.apiUrl === 'string' ? raw.apiUrl.trim() : '';
  // "" → this origin; a relative path or an absolute URL, without its trailing slash
  const apiUrl = new URL(given || '/', window.location.href).href.replace(/\/+$/, '');
  const shared = typeof raw.sharedUrl === 'string' ? raw.sharedUrl.trim() : '';
  const sharedUrl = shared ? new URL(shared, window.location.href).href.replace(/\/+$/, '') : apiUrl;
  if (raw.signIn !== 'local' && raw.signIn !== 'host') throw new Error('config.json: signIn must be "local" or "host"');
  return { apiUrl, sharedUrl, signIn: raw.signIn };
}
