// A list the API pages back by cursor (`{items, next_cursor}`, newest first): the history's and
// the wallet's.
import { useCallback, useEffect, useState } from 'react';
import { useErrorText } from './api';

/** One page of a list: its items, and the cursor of the next (null at the last). */
type Paged = { items: unknown[]; next_cursor: string | null };

/**
 * The pages of a list read so far: the first on mount and on `reload` (pull to refresh, after a
 * withdrawal), the next on `more`. `page` reads one page after `cursor` (none: the first); keep
 * it stable (useCallback), as a new one reads the list again. `first` is the first page's whole
 * answer, for what it carries beside the items (the balance, the currency); `error` the sentence
 * for the last failure.
 */
export function usePages<Page extends Paged>(page: (cursor?: string) => Promise<Page>) {
  const errorText = useErrorText();
  const [first, setFirst] = useState<Page | null>(null);
  const [items, setItems] = useState<Page['items'][number][]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState('');

  const reload = useCallback(async () => {
    setError('');
    try {
      const answer = await page();
      setFirst(answer);
      setItems(answer.items);
      setCursor(answer.next_cursor);
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setLoading(false);
    }
  }, [page, errorText]);

  useEffect(() => {
    void reload();
  }, [reload]);

  const more = async () => {
    if (!cursor) return;
    setLoading(true);
    try {
      const answer = await page(cursor);
      setItems((held) => [...held, ...answer.items]);
      setCursor(answer.next_cursor);
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setLoading(false);
    }
  };

  return { first, items, cursor, loading, error, reload, more };
}
