import type { TranslationMessages } from 'react-admin';
import polyglotI18nProvider from 'ra-i18n-polyglot';
import englishMessages from 'ra-language-english';
import chineseMessages from 'ra-language-chinese';
import { en } from './en';
import { zh } from './zh';

type Messages = Record<string, unknown>;

function merge(...layers: Messages[]): Messages {
  const out: Messages = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer)) {
      const before = out[key];
      out[key] =
        value && typeof value === 'object' && before && typeof before === 'object'
          ? merge(before as Messages, value as Messages)
          : value;
    }
  }
  return out;
}

// Chinese first: react-admin's English under ra-language-chinese (for any message it lacks), under
// the console's own Chinese; English second.
const messages = {
  zh: merge(englishMessages as Messages, chineseMessages as Messages, zh),
  en: merge(englishMessages as Messages, en),
} as unknown as Record<string, TranslationMessages>;

export const LOCALES = [
  { locale: 'zh', name: '简体中文' },
  { locale: 'en', name: 'English' },
];

export const i18nProvider = polyglotI18nProvider((locale) => messages[locale] ?? messages.zh, 'zh', LOCALES, {
  allowMissing: true,
});
