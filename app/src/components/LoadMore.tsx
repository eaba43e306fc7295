import { Button, SpinLoading } from 'antd-mobile';
import { useI18n } from '../i18n';

type LoadMoreProps = {
  /** A page is being read: a spinner. */
  loading: boolean;
  /** The list has another page (a cursor): "load more", while none is being read. */
  hasMore: boolean;
  /** Reads the next page. */
  onMore: () => void;
  /** Said once the last page is in and nothing is being read, when given (e.g. "no more"). */
  end?: string;
};

/** The foot of a list paged by cursor (`usePages`, paging.ts): a spinner, "load more", or the end. */
export function LoadMore({ loading, hasMore, onMore, end }: LoadMoreProps) {
  const { t } = useI18n();
  return (
    <>
      {loading && (
        <div className="center pad">
          <SpinLoading color="primary" />
        </div>
      )}
      {!loading && hasMore && (
        <div className="pad">
          <Button block fill="outline" color="danger" onClick={onMore} data-action="more">
            {t.loadMore}
          </Button>
        </div>
      )}
      {!loading && !hasMore && end && <p className="muted small center pad">{end}</p>}
    </>
  );
}
