import { ConfigProvider, ErrorBlock, SpinLoading } from 'antd-mobile';
import enUS from 'antd-mobile/es/locales/en-US';
import zhCN from 'antd-mobile/es/locales/zh-CN';
import type { ReactNode } from 'react';
import { BrowserRouter, Navigate, Route, Routes, useLocation } from 'react-router-dom';
import { ApiProvider } from './api';
import type { AppConfig } from './config';
import { I18nProvider, useI18n } from './i18n';
import { HistoryPage } from './pages/History';
import { PacketPage } from './pages/Packet';
import { SendPage } from './pages/Send';
import { SignInPage } from './pages/SignIn';
import { WalletPage } from './pages/Wallet';
import { SessionProvider, useSession } from './session';

export function App({ config }: { config: AppConfig }) {
  return (
    <I18nProvider>
      <Localized>
        <SessionProvider config={config}>
          <ApiProvider config={config}>
            <BrowserRouter basename={import.meta.env.BASE_URL.replace(/\/$/, '')}>
              <Routes>
                <Route path="/signin" element={<SignInPage />} />
                <Route path="/" element={<RequireSession><SendPage /></RequireSession>} />
                <Route path="/p/:packetId" element={<RequireSession><PacketPage /></RequireSession>} />
                <Route path="/history" element={<RequireSession><HistoryPage /></RequireSession>} />
                <Route path="/wallet" element={<RequireSession><WalletPage /></RequireSession>} />
                <Route path="*" element={<Navigate to="/" replace />} />
              </Routes>
            </BrowserRouter>
          </ApiProvider>
        </SessionProvider>
      </Localized>
    </I18nProvider>
  );
}

function Localized({ children }: { children: ReactNode }) {
  const { locale } = useI18n();
  return <ConfigProvider locale={locale === 'en' ? enUS : zhCN}>{children}</ConfigProvider>;
}

/** The page when signed in; else the sign-in page (local), which comes back here after. */
function RequireSession({ children }: { children: ReactNode }) {
  const { state } = useSession();
  const { t } = useI18n();
  const location = useLocation();
  if (state.status === 'starting') {
    return (
      <div className="center-fill">
        <SpinLoading color="primary" />
      </div>
    );
  }
  if (state.status === 'host-missing') {
    return <ErrorBlock status="disconnected" fullPage title={t.hostMissing} description={t.hostMissingLead} />;
  }
  if (state.status === 'signed-out') {
    const next = `${location.pathname}${location.search}`;
    return <Navigate to={`/signin?next=${encodeURIComponent(next)}`} replace />;
  }
  return <>{children}</>;
}
