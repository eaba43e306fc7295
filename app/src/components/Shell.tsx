import { TabBar } from 'antd-mobile';
import { BillOutline, GiftOutline, PayCircleOutline } from 'antd-mobile-icons';
import type { ReactNode } from 'react';
import { useLocation, useNavigate } from 'react-router-dom';
import { useI18n } from '../i18n';
import { useSession } from '../session';

/** The language switch: 中文 ⇄ EN. */
export function LanguageSwitch({ light = false }: { light?: boolean }) {
  const { t, toggle } = useI18n();
  return (
    <button type="button" className={`lang-switch${light ? ' light' : ''}`} data-action="language" onClick={toggle}>
      {t.language}
    </button>
  );
}

/** The top bar: the title, the user (with sign-out), the language switch. */
export function TopBar({ title, left }: { title: string; left?: ReactNode }) {
  const { state, signOut, mode } = useSession();
  const { t } = useI18n();
  const navigate = useNavigate();
  const user = state.status === 'signed-in' ? state.user : '';
  return (
    <header className="top-bar">
      <div className="top-bar-left">
        {left}
        {user && (
          <span className="user-chip" data-testid="signed-in-user" title={user}>
            <span className="avatar small">{initial(user)}</span>
            <span className="user-chip-name">{user}</span>
          </span>
        )}
      </div>
      <h1 className="top-bar-title">{title}</h1>
      <div className="top-bar-right">
        {user && mode === 'local' && (
          <button
            type="button"
            className="link-button light"
            data-action="sign-out"
            onClick={() => {
              signOut();
              navigate('/signin');
            }}
          >
            {t.signOut}
          </button>
        )}
        <LanguageSwitch light />
      </div>
    </header>
  );
}

/** A tab page: the top bar, the page, the tab bar. */
export function Shell({ title, children }: { title: string; children: ReactNode }) {
  const { t } = useI18n();
  const location = useLocation();
  const navigate = useNavigate();
  const tabs = [
    { key: '/', title: t.tabSend, icon: <GiftOutline /> },
    { key: '/history', title: t.tabHistory, icon: <BillOutline /> },
    { key: '/wallet', title: t.tabWallet, icon: <PayCircleOutline /> },
  ];
  return (
    <div className="shell">
      <TopBar title={title} />
      <main className="shell-main">{children}</main>
      <nav className="shell-tabs">
        <TabBar activeKey={location.pathname} onChange={(key) => navigate(key)} safeArea>
          {tabs.map((tab) => (
            <TabBar.Item key={tab.key} icon={tab.icon} title={tab.title} />
          ))}
        </TabBar>
      </nav>
    </div>
  );
}

/** The first letter of a user's name, for their avatar (text, never markup). */
export function initial(user: string): string {
  return [...user.trim()][0]?.toUpperCase() ?? '?';
}
