import AccountBalanceWalletIcon from '@mui/icons-material/AccountBalanceWallet';
import AssessmentIcon from '@mui/icons-material/Assessment';
import FlagIcon from '@mui/icons-material/Flag';
import HistoryEduIcon from '@mui/icons-material/HistoryEdu';
import LockIcon from '@mui/icons-material/Lock';
import PaymentsIcon from '@mui/icons-material/Payments';
import PersonSearchIcon from '@mui/icons-material/PersonSearch';
import { lazy, useMemo, type ReactNode } from 'react';
import { BrowserRouter, Route } from 'react-router-dom';
import {
  Admin,
  AppBar,
  AuthCallback,
  CustomRoutes,
  Layout,
  Menu,
  Resource,
  UserMenu,
  defaultTheme,
  useGetIdentity,
  type RaThemeOptions,
} from 'react-admin';
import { makeClient } from './api/client';
import { makeAuth } from './authProvider';
import { BusinessTimeZoneProvider, dayIn } from './businessDay';
import type { ConsoleConfig } from './config';
import { makeDataProvider } from './dataProvider';
import { i18nProvider } from './i18n';
import { AdjustmentCreate, AdjustmentShow, AdjustmentsPage } from './pages/adjustments';
import { AuditList } from './pages/audit';
import { FlagList } from './pages/flags';
import { HoldList } from './pages/holds';
import { LoginPage } from './pages/LoginPage';
import { PacketShow } from './pages/packets';
import { ReportsPage } from './pages/reports';
import { UserSearchPage, UserShow } from './pages/users';
import { WithdrawalList, WithdrawalShow } from './pages/withdrawals';

// The charts (recharts) load with the dashboard only.
const Dashboard = lazy(() => import('./pages/Dashboard'));

// Chinese first: a sans-serif with CJK glyphs before MUI's Latin defaults.
const theme: RaThemeOptions = {
  ...defaultTheme,
  // Warning's orange darkened to 5:1 on white (MUI's #ed6c02 is 3.1:1, under WCAG AA's 4.5:1).
  palette: {
    ...defaultTheme.palette,
    primary: { main: '#b71c1c' },
    secondary: { main: '#7f0000' },
    warning: { main: '#b45309' },
  },
  components: {
    ...defaultTheme.components,
    // Column titles on one line (Chinese ones wrap a character at a time otherwise).
    RaDatagrid: { styleOverrides: { root: { '& .RaDatagrid-headerCell': { whiteSpace: 'nowrap' } } } },
    // An empty list's sentence at full strength (react-admin fades it to 50%, under 4.5:1).
    RaEmpty: { styleOverrides: { root: { '& .RaEmpty-message': { opacity: 1, color: 'rgba(0, 0, 0, 0.7)' } } } },
  },
  typography: {
    fontFamily: [
      'system-ui',
      '-apple-system',
      '"Segoe UI"',
      'Roboto',
      '"PingFang SC"',
      '"Microsoft YaHei"',
      '"Noto Sans CJK SC"',
      '"WenQuanYi Zen Hei"',
      'sans-serif',
    ].join(','),
  },
};

// The menu: the dashboard, every resource with a list, then the reports page (a route of its own).
const ConsoleMenu = () => (
  <Menu>
    <Menu.DashboardItem />
    <Menu.ResourceItems />
    <Menu.Item to="/reports" primaryText="console.reports.title" leftIcon={<AssessmentIcon />} />
  </Menu>
);

// The user menu's button is named by the operator it shows (react-admin names it "Profile"
// while it shows the name: a spoken command would not find it, WCAG 2.5.3).
const OperatorMenu = () => {
  const { identity } = useGetIdentity();
  return <UserMenu label={identity?.fullName ? String(identity.fullName) : 'ra.auth.user_menu'} />;
};
const ConsoleAppBar = () => <AppBar userMenu={<OperatorMenu />} />;

const ConsoleLayout = ({ children }: { children: ReactNode }) => (
  <Layout menu={ConsoleMenu} appBar={ConsoleAppBar}>
    {children}
  </Layout>
);

export const App = ({ config }: { config: ConsoleConfig }) => {
  const { authProvider, token } = useMemo(() => makeAuth(config), [config]);
  const dataProvider = useMemo(
    () => makeDataProvider(makeClient(config.apiBase, token), () => dayIn(config.businessTimeZone)),
    [config, token],
  );
  const Login = useMemo(() => () => <LoginPage config={config} />, [config]);
  return (
    // Real paths under /console/ (the server answers index.html for any page of it). Navigations
    // are not transitions: react-admin's sign-out (LogoutOnMount, for a signed-out visit of any
    // page but /login) navigates and clears its queries at once, and a navigation left pending as
    // a transition loses to the re-render that clearing causes, again and again (seconds of a
    // sign-out loop before the sign-in page shows).
    <BrowserRouter basename="/console" useTransitions={false}>
    <BusinessTimeZoneProvider zone={config.businessTimeZone}>
    <Admin
      title="console.title"
      dashboard={Dashboard}
      layout={ConsoleLayout}
      authProvider={authProvider}
      dataProvider={dataProvider}
      i18nProvider={i18nProvider}
      loginPage={Login}
      // `oidc`: the provider's answer, handed here from /console/ (oidcAuth's routeSignInAnswer)
      authCallbackPage={AuthCallback}
      theme={theme}
      requireAuth
      disableTelemetry
    >
      <Resource name="users" list={UserSearchPage} show={UserShow} icon={PersonSearchIcon} recordRepresentation="user" />
      <Resource
        name="adjustments"
        list={AdjustmentsPage}
        create={AdjustmentCreate}
        show={AdjustmentShow}
        icon={AccountBalanceWalletIcon}
      />
      <Resource name="withdrawals" list={WithdrawalList} show={WithdrawalShow} icon={PaymentsIcon} />
      <Resource name="holds" list={HoldList} icon={LockIcon} />
      <Resource name="flags" list={FlagList} icon={FlagIcon} />
      <Resource name="audit" list={AuditList} icon={HistoryEduIcon} />
      <Resource name="packets" show={PacketShow} />
      <Resource name="movements" />
      <Resource name="user_packets" />
      <Resource name="user_flags" />
      <Resource name="user_audit" />
      <CustomRoutes>
        <Route path="/reports" element={<ReportsPage />} />
      </CustomRoutes>
    </Admin>
    </BusinessTimeZoneProvider>
    </BrowserRouter>
  );
};
