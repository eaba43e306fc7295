// Amounts are integers of the currency's minor unit (openapi.yaml's Currency: {code, exponent}),
// shown and parsed by integer arithmetic on the digits, never floats.

import { formatDigits as sdkDigits } from 'red-packets-sdk';

export interface Currency {
  code: string;
  exponent: number;
}

/** The stack's currency until an answer names it (every answer does). */
export const DEFAULT_CURRENCY: Currency = { code: 'CNY', exponent: 2 };

const SYMBOLS: Record<string, string> = { CNY: '¥', JPY: '¥', USD: '$', HKD: 'HK$', EUR: '€', GBP: '£' };

/** 1234 with exponent 2 → "12.34" (no symbol, no grouping): the SDK's, so the app and its sentences agree. */
export function formatDigits(cents: number, currency: Currency = DEFAULT_CURRENCY): string {
  return sdkDigits(cents, currency);
}

/** 1234 → "¥12.34" (CNY), "12.34 SGD" for a currency without a symbol here; `signed` adds "+". */
export function formatMoney(cents: number, currency: Currency = DEFAULT_CURRENCY, signed = false): string {
  const sign = cents < 0 ? '-' : signed && cents > 0 ? '+' : '';
  const digits = formatDigits(Math.abs(cents), currency);
  const symbol = SYMBOLS[currency.code];
  return symbol ? `${sign}${symbol}${digits}` : `${sign}${digits} ${currency.code}`;
}

/** "100", "100.5" or "100.50" → 10050 minor units (exponent 2); undefined when not an amount. */
export function parseMoney(text: string, currency: Currency = DEFAULT_CURRENCY): number | undefined {
  const match = /^\s*(\d{1,12})(?:\.(\d*))?\s*$/.exec(text ?? '');
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  if (fraction.length > currency.exponent) return undefined;
  const value = Number(match[1] + fraction.padEnd(currency.exponent, '0'));
  return Number.isSafeInteger(value) ? value : undefined;
}

/** The movements that take money out of a wallet (openapi.yaml's Movement.kind). */
export const OUT_KINDS = new Set(['send', 'withdrawal', 'adjustment_debit']);
