import { DateField, useLocaleState, type DateFieldProps } from 'react-admin';

/** An instant, in the operator's time zone and in the console's language (not the browser's). */
export const TimeField = (props: DateFieldProps) => {
  const [locale] = useLocaleState();
  return (
    <DateField
      showTime
      locales={locale === 'en' ? 'en-GB' : 'zh-CN'}
      options={{ year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false }}
      {...props}
      sx={{ whiteSpace: 'nowrap', ...props.sx }}
    />
  );
};
