import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig, type ProxyOptions } from 'vite';

const here = dirname(fileURLToPath(import.meta.url));

// The one Content-Security-Policy of the app (csp.txt, also sent by the local API with every file
// of /app/), with the API's origin and the shared views' added to connect-src when
// public/config.json names other ones.
function policy(): string {
  const csp = readFileSync(join(here, 'csp.txt'), 'utf8').trim();
  try {
    const config = JSON.parse(readFileSync(join(here, 'public/config.json'), 'utf8')) as { apiUrl?: string; sharedUrl?: string };
    const absolute = [config.apiUrl, config.sharedUrl].filter((url): url is string => !!url && /^https?:\/\//.test(url));
    const origins = [...new Set(absolute.map((url) => new URL(url).origin))];
    if (origins.length) return csp.replace("connect-src 'self'", `connect-src 'self' ${origins.join(' ')}`);
  } catch {
    // no config.json or not JSON: the policy as written
  }
  return csp;
}

// Where `vite` (dev) and `vite preview` send the API's calls: the local API of `make run`, on the
// app's own origin (config.json's apiUrl "": no CORS).
const api = process.env.API_URL ?? 'http://127.0.0.1:3000';
const proxy: Record<string, ProxyOptions> = {
  '/packets': { target: api, changeOrigin: false },
  '/me': { target: api, changeOrigin: false },
  '/local': { target: api, changeOrigin: false },
};

export default defineConfig({
  base: '/app/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 1500,
  },
  // red-packets-sdk is ../sdk (a file: dependency, linked): the dev server may read it.
  server: { host: '127.0.0.1', port: 5174, strictPort: true, proxy, fs: { allow: [here, join(here, '../sdk')] } },
  // `vite preview` serves the built app as `make run` does: same origin as the API (proxied),
  // under the app's Content-Security-Policy.
  preview: {
    host: '127.0.0.1',
    port: 4174,
    strictPort: true,
    proxy,
    headers: { 'Content-Security-Policy': policy() },
  },
});
