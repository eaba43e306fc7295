import type { components } from './schema.js';

type Currency = components['schemas']['Currency'];

/**
 * An amount in minor units as its digits, by integer arithmetic on them (never floats): 1234 with
 * exponent 2 → "12.34", no symbol, no grouping.
 */
export function formatDigits(minor: number, currency: Pick<Currency, 'exponent'>): string {
  const exponent = currency.exponent;
  const digits = Math.abs(Math.trunc(minor)).toString().padStart(exponent + 1, '0');
  const major = digits.slice(0, digits.length - exponent);
  const fraction = digits.slice(digits.length - exponent);
  return `${minor < 0 ? '-' : ''}${major}${exponent > 0 ? `.${fraction}` : ''}`;
}
