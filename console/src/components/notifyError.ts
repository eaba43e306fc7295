import { useNotify } from 'react-admin';

/** Shows a failed call's sentence (the data provider's error message, already translated) as an error notice. */
export const useNotifyError = () => {
  const notify = useNotify();
  return (error: Error) => notify(error.message, { type: 'error', messageArgs: { _: error.message } });
};
