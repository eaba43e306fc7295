// The app's words: Simplified Chinese first, English second (the browser's language until the
// switch in the top bar or on the sign-in page is used; the choice is kept in localStorage). Error sentences are the SDK's
// (RedPacketsError.userMessage), in the same locale.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';

export type Locale = 'zh-CN' | 'en';

const zh = {
  appTitle: '红包',
  language: 'EN',
  languageName: 'English',
  tabSend: '发红包',
  tabHistory: '红包记录',
  tabWallet: '零钱',
  signOut: '退出',
  // sign-in
  signInTitle: '登录',
  signInLead: '本地演示登录：选择一个用户，并填写你所在的群聊。',
  signInUser: '用户',
  signInUserTyped: '或输入用户名',
  signInChats: '我所在的群聊',
  signInChatPlaceholder: '群聊 ID，例如 family',
  signInAddChat: '添加',
  signInNoChats: '不在任何群聊中',
  signInSubmit: '登录',
  signInNeedUser: '请选择或输入用户名',
  signInFailed: '登录失败',
  hostMissing: '请在 App 内打开这个页面',
  hostMissingLead: '这个页面由宿主 App 提供登录信息（window.RedPacketsHost），现在没有找到。',
  signedInAs: (user: string) => `${user}`,
  // send
  lucky: '拼手气红包',
  fixed: '普通红包',
  luckyHint: '每人抽到的金额随机',
  fixedHint: '每人收到的金额相同',
  totalAmount: '总金额',
  eachAmount: '单个金额',
  count: '红包个数',
  countUnit: '个',
  yuan: '元',
  greeting: '祝福语',
  defaultGreeting: '恭喜发财，大吉大利',
  more: '更多设置',
  chatId: '发到群聊',
  chatIdPlaceholder: '群聊 ID（选填）',
  membersOnly: '仅群成员可领',
  membersOnlyHint: '领取时需要群成员凭证',
  recipients: '指定领取人',
  recipientsPlaceholder: '用户名，用逗号或空格分隔（选填）',
  passphrase: '口令',
  passphrasePlaceholder: '口令红包：领取时需输入（选填）',
  opensAt: '开抢时间',
  opensAtHint: '留空则立即可领',
  submitSend: '塞钱进红包',
  sending: '正在发送…',
  balance: '零钱余额',
  amountInvalid: '请输入正确的金额',
  countInvalid: '请输入红包个数',
  membersOnlyNeedsChat: '“仅群成员可领”需要填写群聊',
  chatInvalid: '群聊 ID 只能包含字母、数字和 _ . : @ -',
  sentTitle: '红包已塞好',
  sentLead: '把链接发给大家，点开就能抢：',
  shareLink: '分享链接',
  copy: '复制链接',
  copied: '已复制',
  copyFailed: '复制失败，请长按链接手动复制',
  viewPacket: '查看红包',
  sendAnother: '再发一个',
  // packet
  packetOf: (sender: string) => `${sender}的红包`,
  open: '開',
  passphraseToOpen: '输入口令领取',
  viewDetails: '看看大家的手气',
  detailsOf: (sender: string) => `${sender}的红包`,
  youGot: '已存入零钱，可用于发红包',
  alreadyGrabbed: '你已经领过这个红包',
  summary: (count: number, total: string, taken: number) => `${count}个红包共${total}，已领取${taken}/${count}个`,
  bestLuck: '手气最佳',
  cancel: '收回',
  cancelConfirm: '收回剩下的红包？',
  cancelConfirmLead: '没被领走的钱会在结算后退回你的零钱。',
  cancelOk: '收回',
  cancelKeep: '再想想',
  cancelled: '已收回',
  statusOpen: '领取中',
  statusFinished: '已领完',
  statusExpired: '已过期',
  statusCancelled: '已收回',
  refunded: (amount: string) => `已退回 ${amount} 到零钱`,
  refundPending: '结算后退回未领取的金额',
  noGrabs: '还没有人领取',
  opensAtLabel: (at: string) => `${at} 开抢`,
  membersOnlyTag: (chat: string) => `仅群「${chat}」成员可领`,
  notAMember: (chat: string) => `这个红包仅限群「${chat}」的成员领取`,
  chatTag: (chat: string) => `群「${chat}」`,
  packetMissing: '找不到这个红包',
  back: '返回',
  // history
  sent: '发出的',
  received: '收到的',
  historyEmptySent: '还没有发过红包',
  historyEmptyReceived: '还没有收到红包（领到的红包结算后出现在这里）',
  from: (sender: string) => `来自 ${sender}`,
  sentPacket: (count: number) => `${count}个红包`,
  revoked: '已撤销',
  loadMore: '加载更多',
  noMore: '没有更多了',
  // wallet
  walletTitle: '我的零钱',
  movements: '零钱明细',
  movementsEmpty: '还没有明细',
  kinds: {
    topup: '充值',
    send: '发红包',
    grab: '抢红包',
    refund: '红包退款',
    withdrawal: '提现',
    withdrawal_return: '提现退回',
    adjustment_credit: '调账入账',
    adjustment_debit: '调账扣款',
  } as Record<string, string>,
  withdrawalStatus: { pending: '处理中', paid: '已到账', failed: '失败' } as Record<string, string>,
  withdraw: '提现',
  withdrawAmount: '提现金额',
  withdrawDestination: '到账账户',
  withdrawDestinationPlaceholder: '绑定的银行卡，例如 card-7731',
  withdrawDestinationInvalid: '请输入绑定的账户（字母、数字、_ . : -）',
  withdrawSubmit: '确认提现',
  withdrawn: (amount: string) => `已申请提现 ${amount}，处理中`,
  withdrawConfirm: '确认提现？',
  withdrawConfirmLead: (amount: string, to: string) => `将 ${amount} 提现到 ${to}，提交后不能撤回。`,
  refresh: '刷新',
  loading: '加载中…',
  networkBusy: '网络繁忙，请稍后再试',
};

type Words = typeof zh;

const en: Words = {
  appTitle: 'Red packets',
  language: '中文',
  languageName: '中文',
  tabSend: 'Send',
  tabHistory: 'History',
  tabWallet: 'Wallet',
  signOut: 'Sign out',
  signInTitle: 'Sign in',
  signInLead: 'Local demo sign-in: pick a user and the chats you are in.',
  signInUser: 'User',
  signInUserTyped: 'or type a user name',
  signInChats: 'My chats',
  signInChatPlaceholder: 'A chat id, e.g. family',
  signInAddChat: 'Add',
  signInNoChats: 'In no chat',
  signInSubmit: 'Sign in',
  signInNeedUser: 'Pick or type a user name',
  signInFailed: 'Sign-in failed',
  hostMissing: 'Open this page inside the app',
  hostMissingLead: 'This page gets its sign-in from the host app (window.RedPacketsHost), which is not here.',
  signedInAs: (user: string) => `${user}`,
  lucky: 'Lucky packet',
  fixed: 'Fixed packet',
  luckyHint: 'Everyone draws a random amount',
  fixedHint: 'Everyone gets the same amount',
  totalAmount: 'Total',
  eachAmount: 'Each',
  count: 'Shares',
  countUnit: '',
  yuan: 'CNY',
  greeting: 'Greeting',
  defaultGreeting: '恭喜发财，大吉大利',
  more: 'More options',
  chatId: 'Into chat',
  chatIdPlaceholder: 'Chat id (optional)',
  membersOnly: 'Members only',
  membersOnlyHint: 'Grabbing needs a membership ticket of the chat',
  recipients: 'Recipients',
  recipientsPlaceholder: 'User names, comma or space separated (optional)',
  passphrase: 'Passphrase',
  passphrasePlaceholder: 'Grabs must type it (optional)',
  opensAt: 'Opens at',
  opensAtHint: 'Empty: open at once',
  submitSend: 'Put money in',
  sending: 'Sending…',
  balance: 'Balance',
  amountInvalid: 'Enter a valid amount',
  countInvalid: 'Enter the number of shares',
  membersOnlyNeedsChat: '“Members only” needs a chat',
  chatInvalid: 'A chat id is letters, digits and _ . : @ -',
  sentTitle: 'Your packet is ready',
  sentLead: 'Share the link; whoever opens it can grab:',
  shareLink: 'Share link',
  copy: 'Copy link',
  copied: 'Copied',
  copyFailed: 'Could not copy: press and hold the link to copy it',
  viewPacket: 'View packet',
  sendAnother: 'Send another',
  packetOf: (sender: string) => `From ${sender}`,
  open: '開',
  passphraseToOpen: 'Type the passphrase',
  viewDetails: 'See who got what',
  detailsOf: (sender: string) => `${sender}'s packet`,
  youGot: 'Added to your wallet',
  alreadyGrabbed: 'You already grabbed this packet',
  summary: (count: number, total: string, taken: number) => `${count} shares, ${total} in all; ${taken}/${count} taken`,
  bestLuck: 'Best luck',
  cancel: 'Take back',
  cancelConfirm: 'Take back what is left?',
  cancelConfirmLead: 'What nobody grabbed returns to your wallet once settled.',
  cancelOk: 'Take back',
  cancelKeep: 'Keep it',
  cancelled: 'Taken back',
  statusOpen: 'Open',
  statusFinished: 'All taken',
  statusExpired: 'Expired',
  statusCancelled: 'Taken back',
  refunded: (amount: string) => `${amount} returned to your wallet`,
  refundPending: 'What is left returns once settled',
  noGrabs: 'Nobody has grabbed yet',
  opensAtLabel: (at: string) => `Opens ${at}`,
  membersOnlyTag: (chat: string) => `Members of “${chat}” only`,
  notAMember: (chat: string) => `This packet is for the members of “${chat}” only`,
  chatTag: (chat: string) => `Chat “${chat}”`,
  packetMissing: 'No such packet',
  back: 'Back',
  sent: 'Sent',
  received: 'Received',
  historyEmptySent: 'You have sent no packets yet',
  historyEmptyReceived: 'Nothing received yet (a grab shows here once settled)',
  from: (sender: string) => `From ${sender}`,
  sentPacket: (count: number) => `${count} shares`,
  revoked: 'Revoked',
  loadMore: 'Load more',
  noMore: 'No more',
  walletTitle: 'My wallet',
  movements: 'Movements',
  movementsEmpty: 'No movements yet',
  kinds: {
    topup: 'Top-up',
    send: 'Sent a packet',
    grab: 'Grabbed',
    refund: 'Packet refund',
    withdrawal: 'Withdrawal',
    withdrawal_return: 'Withdrawal returned',
    adjustment_credit: 'Adjustment (credit)',
    adjustment_debit: 'Adjustment (debit)',
  },
  withdrawalStatus: { pending: 'pending', paid: 'paid', failed: 'failed' },
  withdraw: 'Withdraw',
  withdrawAmount: 'Amount',
  withdrawDestination: 'To',
  withdrawDestinationPlaceholder: 'A bound card, e.g. card-7731',
  withdrawDestinationInvalid: 'Enter a bound account (letters, digits, _ . : -)',
  withdrawSubmit: 'Withdraw',
  withdrawn: (amount: string) => `Withdrawal of ${amount} asked for: pending`,
  withdrawConfirm: 'Withdraw?',
  withdrawConfirmLead: (amount: string, to: string) => `${amount} to ${to}; it cannot be taken back once asked for.`,
  refresh: 'Refresh',
  loading: 'Loading…',
  networkBusy: 'Network busy, please try again',
};

const WORDS: Record<Locale, Words> = { 'zh-CN': zh, en };
const KEY = 'app.locale';

/** The choice kept, else the browser's first language the app speaks, else Chinese. */
function initialLocale(): Locale {
  const kept = localStorage.getItem(KEY);
  if (kept === 'en' || kept === 'zh-CN') return kept;
  for (const language of navigator.languages ?? [navigator.language]) {
    const tag = language.toLowerCase();
    if (tag.startsWith('zh')) return 'zh-CN';
    if (tag.startsWith('en')) return 'en';
  }
  return 'zh-CN';
}

interface I18n {
  locale: Locale;
  t: Words;
  setLocale(locale: Locale): void;
  toggle(): void;
}

const Context = createContext<I18n | null>(null);

export function I18nProvider({ children }: { children: ReactNode }) {
  const [locale, setState] = useState<Locale>(initialLocale);
  useEffect(() => {
    document.documentElement.lang = locale;
    document.title = locale === 'en' ? 'Red packets' : '红包';
  }, [locale]);
  const setLocale = useCallback((next: Locale) => {
    localStorage.setItem(KEY, next);
    setState(next);
  }, []);
  const value = useMemo<I18n>(
    () => ({ locale, t: WORDS[locale], setLocale, toggle: () => setLocale(locale === 'zh-CN' ? 'en' : 'zh-CN') }),
    [locale, setLocale],
  );
  return <Context.Provider value={value}>{children}</Context.Provider>;
}

export function useI18n(): I18n {
  const value = useContext(Context);
  if (!value) throw new Error('useI18n outside I18nProvider');
  return value;
}

/** A time as the user reads it: "11-28 20:15:07" (this year) or "2026-11-28 20:15". */
export function formatTime(iso: string | undefined, locale: Locale, withSeconds = false): string {
  if (!iso) return '';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const thisYear = at.getFullYear() === new Date().getFullYear();
  return new Intl.DateTimeFormat(locale === 'en' ? 'en-GB' : 'zh-CN', {
    ...(thisYear ? {} : { year: 'numeric' }),
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    ...(withSeconds ? { second: '2-digit' } : {}),
    hour12: false,
  }).format(at);
}
