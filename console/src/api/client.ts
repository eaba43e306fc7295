import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

export type ApiClient = Client<paths>;

/**
 * The typed client of openapi.yaml (the SDK's generated types, ./schema.ts): every call carries
 * `Authorization: Bearer <the signed-in operator's token>` (`local`: the local API's; `oidc`: the
 * provider's ID token).
 */
export function makeClient(
  apiBase: string,
  token: () => string | null | Promise<string | null>,
): ApiClient {
  const client = createClient<paths>({ baseUrl: apiBase || window.location.origin });
  const bearer: Middleware = {
    async onRequest({ request }) {
      const value = await token();
      if (value) request.headers.set('Authorization', `Bearer ${value}`);
      return request;
    },
  };
  client.use(bearer);
  return client;
}
