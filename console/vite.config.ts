import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig, type Connect, type Plugin, type ProxyOptions } from 'vite';

const here = dirname(fileURLToPath(import.meta.url));
// The one Content-Security-Policy of the console, also read by the Rust local gateway.
const csp = readFileSync(join(here, 'csp.txt'), 'utf8').trim();
// Where `vite` (dev) and `vite preview` send the API's calls: the local API of `make run`.
const api = process.env.API_URL ?? 'http://127.0.0.1:3000';
const proxy: Record<string, ProxyOptions> = {
  '/ops': { target: api, changeOrigin: false },
  '/me': { target: api, changeOrigin: false },
  '/local': { target: api, changeOrigin: false },
};

// Development only (OPS_TOKEN_SHIM=1): answers `POST /local/ops-token` by running
// `target/debug/local ops-token`, for a local API built before it served that route itself.
// The console always calls `POST /local/ops-token`; this only stands in for the server.
function opsTokenShim(): Plugin {
  const middleware: Connect.NextHandleFunction = (req: IncomingMessage, res: ServerResponse, next) => {
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/local/ops-token') return next();
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const reply = (status: number, value: unknown) => {
        res.statusCode = status;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(value));
      };
      let operator = '';
      let roles: string[] = [];
      try {
        ({ operator, roles } = JSON.parse(body));
      } catch {
        return reply(400, { error: { code: 'invalid_request', message: 'not JSON' } });
      }
      const local = process.env.LOCAL_BIN ?? join(here, '../target/debug/local');
      execFile(local, ['ops-token', String(operator), (roles ?? []).join(',')], (error, stdout, stderr) => {
        if (error) return reply(400, { error: { code: 'invalid_request', message: stderr.trim() || error.message } });
        reply(200, { token: stdout.trim() });
      });
    });
  };
  return {
    name: 'ops-token-shim',
    configureServer(server) {
      if (process.env.OPS_TOKEN_SHIM === '1') server.middlewares.use(middleware);
    },
    configurePreviewServer(server) {
      if (process.env.OPS_TOKEN_SHIM === '1') server.middlewares.use(middleware);
    },
  };
}

export default defineConfig({
  base: '/console/',
  plugins: [react(), opsTokenShim()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 2000,
  },
  server: { host: '127.0.0.1', port: 5173, strictPort: true, proxy },
  // `vite preview` serves the built console as `make run` does: same origin as the API (proxied),
  // under the console's Content-Security-Policy.
  preview: {
    host: '127.0.0.1',
    port: 4173,
    strictPort: true,
    proxy,
    headers: { 'Content-Security-Policy': csp },
  },
});
