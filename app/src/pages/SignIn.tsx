// The local stand-in sign-in (config.json signIn "local"): a user name (alice, bob, carol, dave or
// typed) and the chats the user is in. The host app signs its users in itself (signIn "host").
import { Button, Input, Selector, Tag } from 'antd-mobile';
import { useState } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router-dom';
import { LanguageSwitch } from '../components/Shell';
import { useI18n } from '../i18n';
import { useSession } from '../session';

const USERS = ['alice', 'bob', 'carol', 'dave'];
const CHAT = /^[A-Za-z0-9_.:@-]{1,128}$/;

export function SignInPage() {
  const { t } = useI18n();
  const { state, mode, signIn } = useSession();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const [picked, setPicked] = useState<string>('');
  const [typed, setTyped] = useState('');
  const [chats, setChats] = useState<string[]>([]);
  const [chat, setChat] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');

  if (mode === 'host' || state.status === 'signed-in') return <Navigate to={next} replace />;

  const user = typed.trim() || picked;
  const addChat = () => {
    const id = chat.trim();
    if (!id || !CHAT.test(id)) return false;
    setChats((held) => (held.includes(id) ? held : [...held, id]));
    setChat('');
    return true;
  };

  const submit = async () => {
    if (!user) {
      setError(t.signInNeedUser);
      return;
    }
    const pending = chat.trim();
    const all = pending && CHAT.test(pending) && !chats.includes(pending) ? [...chats, pending] : chats;
    setBusy(true);
    setError('');
    try {
      await signIn(user, all);
      navigate(next, { replace: true });
    } catch (failure) {
      setError(`${t.signInFailed}: ${failure instanceof Error ? failure.message : String(failure)}`);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="sign-in">
      <div className="sign-in-top">
        <LanguageSwitch light />
      </div>
      <div className="sign-in-hero">
        <div className="hero-envelope" aria-hidden="true">
          <span>福</span>
        </div>
        <h1>{t.appTitle}</h1>
      </div>
      <form
        className="sign-in-card"
        onSubmit={(event) => {
          event.preventDefault();
          void submit();
        }}
      >
        <h2>{t.signInTitle}</h2>
        <p className="muted">{t.signInLead}</p>
        <label className="field-label">{t.signInUser}</label>
        <Selector
          columns={4}
          options={USERS.map((name) => ({ label: name, value: name }))}
          value={picked && !typed.trim() ? [picked] : []}
          onChange={(values) => {
            setPicked(values[0] ?? '');
            setTyped('');
          }}
        />
        <div className="input-box">
          <Input name="user" placeholder={t.signInUserTyped} value={typed} onChange={setTyped} clearable maxLength={128} />
        </div>
        <label className="field-label">{t.signInChats}</label>
        <div className="chat-tags" data-testid="chats">
          {chats.length === 0 && <span className="muted small">{t.signInNoChats}</span>}
          {chats.map((id) => (
            <Tag
              key={id}
              round
              color="danger"
              fill="outline"
              className="chat-tag"
              onClick={() => setChats((held) => held.filter((c) => c !== id))}
            >
              {id} ×
            </Tag>
          ))}
        </div>
        <div className="input-row">
          <div className="input-box grow">
            <Input
              name="chat"
              placeholder={t.signInChatPlaceholder}
              value={chat}
              onChange={setChat}
              onEnterPress={(event) => {
                event.preventDefault();
                addChat();
              }}
              maxLength={128}
            />
          </div>
          <Button size="small" fill="outline" color="danger" data-action="add-chat" onClick={() => void addChat()}>
            {t.signInAddChat}
          </Button>
        </div>
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        <Button block color="danger" size="large" type="submit" loading={busy} data-submit="sign-in" className="gold-text">
          {t.signInSubmit}
        </Button>
      </form>
    </div>
  );
}

/** The page to go to after signing in: a path of this app only. */
function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/';
}
