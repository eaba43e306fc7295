import type { Locale } from './codes.js';
import { formatDigits } from './money.js';
import type { components } from './schema.js';

type SendLimits = components['schemas']['SendLimits'];
type SendRequest = components['schemas']['SendRequest'];

/** A limit of {@link SendLimits} a draft crosses, and the field of the send it concerns. */
export interface DraftProblem {
  /** The limit crossed: its name in `GET /me/limits`. */
  limit: 'max_count' | 'max_total_cents' | 'min_share_cents' | 'max_greeting_chars' | 'max_recipients';
  /** The request's field the server would name (`field` of its `invalid_request`). */
  field: 'count' | 'total_cents' | 'greeting' | 'recipients';
}

/**
 * The first limit `draft` crosses, or undefined: what `POST /packets` would refuse it for, said
 * before sending. (The server checks everything again; this is for the user's sake.)
 */
export function draftProblem(draft: Pick<SendRequest, 'total_cents' | 'count' | 'greeting' | 'recipients'>, limits: SendLimits): DraftProblem | undefined {
  if (draft.count > limits.max_count) return { limit: 'max_count', field: 'count' };
  if (draft.total_cents > limits.max_total_cents) return { limit: 'max_total_cents', field: 'total_cents' };
  if (draft.total_cents < draft.count * limits.min_share_cents) return { limit: 'min_share_cents', field: 'count' };
  if (draft.greeting != null && [...draft.greeting].length > limits.max_greeting_chars) {
    return { limit: 'max_greeting_chars', field: 'greeting' };
  }
  if (draft.recipients != null && draft.recipients.length > limits.max_recipients) {
    return { limit: 'max_recipients', field: 'recipients' };
  }
  return undefined;
}

/** An amount as a sentence says it: "200.00元" (CNY, in Chinese), "200.00 CNY" otherwise. */
function amount(minor: number, limits: SendLimits, locale: Locale): string {
  const digits = formatDigits(minor, limits.currency);
  return locale === 'zh-CN' && limits.currency.code === 'CNY' ? `${digits}元` : `${digits} ${limits.currency.code}`;
}

/**
 * The sentence for a limit, with its value, in Simplified Chinese (the default) or English, as
 * WeChat says it ("单个红包金额不可超过200.00元").
 */
export function limitMessage(limit: DraftProblem['limit'], limits: SendLimits, locale: Locale = 'zh-CN'): string {
  const zh = locale === 'zh-CN';
  switch (limit) {
    case 'max_total_cents':
      return zh
        ? `单个红包金额不可超过${amount(limits.max_total_cents, limits, locale)}`
        : `A packet may hold at most ${amount(limits.max_total_cents, limits, locale)}`;
    case 'max_count':
      return zh ? `红包个数不可超过${limits.max_count}个` : `A packet may have at most ${limits.max_count} shares`;
    case 'min_share_cents':
      return zh
        ? `每人至少${amount(limits.min_share_cents, limits, locale)}，请减少个数或增加金额`
        : `Each share must be at least ${amount(limits.min_share_cents, limits, locale)}: fewer shares, or a larger amount`;
    case 'max_greeting_chars':
      return zh ? `祝福语不可超过${limits.max_greeting_chars}个字` : `The greeting may be at most ${limits.max_greeting_chars} characters`;
    case 'max_recipients':
      return zh ? `指定领取人不可超过${limits.max_recipients}位` : `A packet may name at most ${limits.max_recipients} recipients`;
  }
}
