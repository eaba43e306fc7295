import type { ErrorCode, Locale } from './codes.js';

type Sentence = { 'zh-CN': string; en: string };

const busy: Sentence = { 'zh-CN': '网络繁忙，请稍后再试', en: 'Network busy, please try again' };
const failed: Sentence = { 'zh-CN': '出了点问题，请稍后再试', en: 'Something went wrong, please try again later' };

/**
 * A sentence for users per code. Typed by every code openapi.yaml lists, so that a new code in
 * the contract does not compile until it has its sentence here.
 */
export const MESSAGES: Readonly<Record<ErrorCode, Sentence>> = {
  invalid_request: { 'zh-CN': '请求有误，请检查后重试', en: 'Something in the request is not right; please check it and try again' },
  unauthorized: { 'zh-CN': '登录信息有误，请重新登录', en: 'There is a problem with your sign-in; please sign in again' },
  insufficient_funds: { 'zh-CN': '余额不足', en: 'Your balance is too low' },
  forbidden: { 'zh-CN': '只有发红包的人可以这样做', en: 'Only the sender can do this' },
  not_eligible: {
    'zh-CN': '这个红包不是发给你的，或你不是这个群的成员',
    en: 'This packet is not for you, or you are not a member of its chat',
  },
  wrong_passphrase: { 'zh-CN': '口令不对，请再试一次', en: 'Wrong passphrase; please try again' },
  not_found: { 'zh-CN': '红包不存在', en: 'This packet does not exist' },
  sold_out: { 'zh-CN': '手慢了，红包派完了', en: 'Too slow: this packet is all gone' },
  not_open: { 'zh-CN': '红包已经结束，没有可以撤回的了', en: 'This packet is over; there is nothing left to take back' },
  not_open_yet: { 'zh-CN': '还没到开抢时间', en: 'This packet is not open yet' },
  expired: { 'zh-CN': '红包已过期', en: 'This packet has expired' },
  cancelled: { 'zh-CN': '红包已被撤回', en: 'The sender took this packet back' },
  payload_too_large: { 'zh-CN': '内容太长了', en: 'That is too much text' },
  idempotency_key_reused: {
    'zh-CN': '这个红包已经提交过，请先查看发出的红包',
    en: 'This was already submitted with other details; check your sent packets first',
  },
  too_many_attempts: { 'zh-CN': '口令错误次数太多，不能再领这个红包了', en: 'Too many wrong passphrases: you cannot grab this packet any more' },
  grab_rate_limited: { 'zh-CN': '抢得太快了，请稍等一下', en: 'You are grabbing too fast; please wait a moment' },
  account_held: { 'zh-CN': '账户暂时受限，请联系客服', en: 'Your account is on hold; please contact support' },
  limit_exceeded: { 'zh-CN': '今天发红包已达上限', en: 'You have reached today’s limit for sending packets' },
  unavailable: busy,
  internal: failed,
  gateway_unauthorized: { 'zh-CN': '登录已过期，请重新登录', en: 'Your sign-in has expired; please sign in again' },
  gateway_forbidden: { 'zh-CN': '没有权限这样做', en: 'You are not allowed to do this' },
  gateway_not_found: { 'zh-CN': '这个功能暂时用不了', en: 'This is not available right now' },
  gateway_throttled: busy,
  gateway_unavailable: busy,
  gateway_error: failed,
  network_error: { 'zh-CN': '网络连接失败，请检查网络后重试', en: 'No connection; check your network and try again' },
  timeout: busy,
  unexpected_response: failed,
};

/** The sentence for a code nobody listed (a code newer than this SDK). */
export const FALLBACK_MESSAGE: Readonly<Sentence> = failed;

/**
 * The sentence to show a user for an error code, in Simplified Chinese (the default) or English;
 * a generic one for a code this SDK does not know.
 */
export function messageFor(code: string, locale: Locale = 'zh-CN'): string {
  const sentence = Object.prototype.hasOwnProperty.call(MESSAGES, code) ? MESSAGES[code as ErrorCode] : FALLBACK_MESSAGE;
  return sentence[locale] ?? sentence['zh-CN'];
}
