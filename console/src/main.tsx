import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { loadConfig } from './config';
import { routeSignInAnswer } from './oidcAuth';

const root = document.getElementById('root')!;

loadConfig()
  .then((config) => {
    if (config.signIn === 'oidc') routeSignInAnswer();
    createRoot(root).render(
      <StrictMode>
        <App config={config} />
      </StrictMode>,
    );
  })
  .catch((error: unknown) => {
    // Shown as text, never as markup.
    const message = document.createElement('pre');
    message.textContent = `The console cannot start: ${error instanceof Error ? error.message : String(error)}`;
    root.replaceChildren(message);
  });
