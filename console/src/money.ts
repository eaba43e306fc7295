import type { components } from './api/schema';

export type Currency = components['schemas']['Currency'];

/**
 * An amount in integer minor units, shown with its currency's exponent: 1500 with
 * `{code: "CNY", exponent: 2}` is "15.00 CNY". Integer arithmetic on the digits, never floats.
 */
export function formatMoney(cents: number, currency: Currency | undefined, signed = false): string {
  if (!Number.isFinite(cents)) return '';
  const sign = cents < 0 ? '-' : signed && cents > 0 ? '+' : '';
  if (!currency) return `${sign}${Math.abs(cents)}`;
  const exponent = currency.exponent;
  const digits = Math.abs(Math.trunc(cents)).toString().padStart(exponent + 1, '0');
  const major = digits.slice(0, digits.length - exponent).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const minor = digits.slice(digits.length - exponent);
  return `${sign}${major}${exponent > 0 ? `.${minor}` : ''} ${currency.code}`;
}

/** "5", "5.0" or "5.00" → 500 minor units (exponent 2); undefined when not an amount of it. */
export function parseMoney(text: string, currency: Currency): number | undefined {
  const exponent = currency.exponent;
  const match = /^\s*(\d{1,12})(?:\.(\d*))?\s*$/.exec(text ?? '');
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  if (fraction.length > exponent) return undefined;
  const value = Number(match[1] + fraction.padEnd(exponent, '0'));
  return Number.isSafeInteger(value) ? value : undefined;
}

/** The movements that take money out of a wallet (openapi.yaml's Movement.kind). */
export const OUT_KINDS = new Set(['send', 'withdrawal', 'adjustment_debit']);
