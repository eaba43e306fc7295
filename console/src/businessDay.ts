import { createContext, createElement, useContext, type ReactNode } from 'react';
import { DEFAULT_BUSINESS_TIME_ZONE } from './config';

/** The calendar day (`YYYY-MM-DD`) of `at` in the IANA time zone `zone`. */
export function dayIn(zone: string, at: Date = new Date()): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(at);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')}`;
}

const BusinessTimeZone = createContext<string>(DEFAULT_BUSINESS_TIME_ZONE);

/** The stack's business time zone (config.json's `businessTimeZone`) for the pages under it. */
export const BusinessTimeZoneProvider = ({ zone, children }: { zone: string; children: ReactNode }) =>
  createElement(BusinessTimeZone.Provider, { value: zone }, children);

/** Today's business day, `YYYY-MM-DD`: the default of the day pickers. */
export const useBusinessToday = (): string => dayIn(useContext(BusinessTimeZone));
