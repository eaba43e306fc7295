import { unstableSetRender } from 'antd-mobile';
import { StrictMode } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { App } from './App';
import { loadConfig } from './config';
import './styles.css';

// antd-mobile's imperative Toast and Dialog render with React 19's createRoot (its own
// ReactDOM.render is gone from React 19).
unstableSetRender((node, container) => {
  const holder = container as (Element | DocumentFragment) & { _appRoot?: Root };
  holder._appRoot ??= createRoot(holder);
  const root = holder._appRoot;
  root.render(node);
  return async () => {
    await new Promise((resolve) => setTimeout(resolve, 0));
    root.unmount();
    delete holder._appRoot;
  };
});

const root = document.getElementById('root')!;

loadConfig()
  .then((config) => {
    createRoot(root).render(
      <StrictMode>
        <App config={config} />
      </StrictMode>,
    );
  })
  .catch((error: unknown) => {
    // Shown as text, never as markup.
    const message = document.createElement('pre');
    message.className = 'boot-error';
    message.textContent = `红包无法启动 · The app cannot start: ${error instanceof Error ? error.message : String(error)}`;
    root.replaceChildren(message);
  });
