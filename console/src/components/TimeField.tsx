import { DateField, useLocaleState, type DateFieldProps } from 'react-admin';

const OPTIONS: Intl.DateTimeFormatOptions = {
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hour12: false,
};

const localesOf = (locale: string) => (locale === 'en' ? 'en-GB' : 'zh-CN');

/** An instant as TimeField shows it, as text (for a sentence): `(iso) => "2024/05/01 12:00:00"`. */
export const useTimeText = () => {
  const [locale] = useLocaleState();
  return (value: string) => {
    const date = new Date(value);
    return Number.isNaN(date.getTime()) ? value : date.toLocaleString(localesOf(locale), OPTIONS);
  };
};

/** An instant, in the operator's time zone and in the console's language (not the browser's). */
export const TimeField = (props: DateFieldProps) => {
  const [locale] = useLocaleState();
  return (
    <DateField
      showTime
      locales={localesOf(locale)}
      options={OPTIONS}
      {...props}
      sx={{ whiteSpace: 'nowrap', ...props.sx }}
    />
  );
};
