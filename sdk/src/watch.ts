import type { Polled, RedPacketsClient, SharedPacketView } from './index.js';

/** How {@link watchSharedPacket} polls. */
export interface WatchOptions {
  /** Between the end of one poll and the start of the next (default 2,500 ms). */
  intervalMs?: number;
  /** The page of grabs to poll (`grabs_from`; default the first). */
  grabsFrom?: number;
  /** Asked before each timed poll: true skips it (e.g. `() => document.hidden`). */
  paused?: () => boolean;
  /** A view that differs from the last one given (not given again on a 304), the settled one included. */
  onView: (view: SharedPacketView, answer: Polled<SharedPacketView>) => void;
  /** A poll that failed (a {@link RedPacketsError}); the next one tries again. */
  onError?: (error: unknown) => void;
  /** Called once, when the view is settled and polling stopped. */
  onSettled?: (view: SharedPacketView) => void;
}

/** A running {@link watchSharedPacket}. */
export interface SharedPacketWatch {
  /** Polls now (after the poll under way, if any), paused or not; e.g. after the user's grab. */
  refresh(): Promise<void>;
  /** Stops polling; a poll under way gives nothing. */
  stop(): void;
  /** True once stopped, by `stop()` or because the packet is settled. */
  readonly stopped: boolean;
}

/**
 * Polls a packet's shared view (`client.sharedPacket`, with If-None-Match) every `intervalMs`,
 * one poll at a time, and stops by itself once the view is `settled` (it never changes after
 * that). The first poll is one interval after the call: read `client.packet()` first for the
 * caller's own fields, and use {@link SharedPacketWatch.refresh} to poll at once.
 */
export function watchSharedPacket(client: RedPacketsClient, packetId: string, options: WatchOptions): SharedPacketWatch {
  const intervalMs = options.intervalMs ?? 2_500;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> = Promise.resolve();

  const schedule = () => {
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(() => poll(false).catch((error: unknown) => options.onError?.(error)), intervalMs);
  };

  async function once(forced: boolean): Promise<void> {
    clearTimeout(timer);
    if (stopped || (!forced && options.paused?.())) return;
    let answer: Polled<SharedPacketView>;
    try {
      answer = await client.sharedPacket(packetId, options.grabsFrom === undefined ? {} : { grabsFrom: options.grabsFrom });
    } catch (error) {
      if (!stopped) options.onError?.(error);
      return;
    }
    if (stopped) return;
    if (!answer.notModified) options.onView(answer.data, answer);
    if (answer.data.settled) {
      stopped = true;
      clearTimeout(timer);
      options.onSettled?.(answer.data);
    }
  }

  /** Queued behind the poll under way; rejects only when a callback threw. */
  function poll(forced: boolean): Promise<void> {
    clearTimeout(timer);
    const next = running.then(() => once(forced));
    running = next.catch(() => undefined).finally(schedule);
    return next;
  }

  schedule();
  return {
    refresh: () => poll(true),
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
    get stopped() {
      return stopped;
    },
  };
}

/**
 * True when `incoming` is older than `shown` (a view of the same packet): it is still open, or
 * not yet settled, when the one shown is not. A shared view may be up to 2 s old (CloudFront
 * keeps an open packet's that long), and a poll under way may land after a cancel's answer: do
 * not let it take the page back.
 */
export function isBehind(
  incoming: Pick<SharedPacketView, 'packet_id' | 'status' | 'settled'>,
  shown: Pick<SharedPacketView, 'packet_id' | 'status' | 'settled'>,
): boolean {
  if (incoming.packet_id !== shown.packet_id) return false;
  if (shown.settled && !incoming.settled) return true;
  return shown.status !== 'open' && incoming.status === 'open';
}
