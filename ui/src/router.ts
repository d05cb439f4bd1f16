/** A tiny History API router for paths under /ui/. */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/ui/';

const listeners = new Set<() => void>();
/** Counts navigations (links, back and forward), so a page can start afresh on each. */
let seq = 0;
window.addEventListener('popstate', () => {
  seq++;
  listeners.forEach((fn) => fn());
});

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  seq++;
  listeners.forEach((fn) => fn());
  window.scrollTo(0, 0);
}

export interface Location {
  /** Path below /ui/, without leading slash ('' for the flags list). */
  path: string;
  query: URLSearchParams;
  /** This navigation's number (a page keyed by it starts afresh on each navigation). */
  seq: number;
}

const current = (): Location => ({
  path: location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '',
  query: new URLSearchParams(location.search),
  seq,
});

/**
 * Remembers a page's own state in the current history entry and its URL query (replaceState: no
 * new entry, no navigation), so back and forward return to it. `read` answers it.
 */
export function rememberState(name: string, state: unknown, query: URLSearchParams): void {
  const qs = query.toString();
  history.replaceState({ ...(history.state ?? {}), [name]: state }, '', location.pathname + (qs ? `?${qs}` : ''));
}

export const rememberedState = <T>(name: string): T | undefined => (history.state as Record<string, T> | null)?.[name];

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const fn = () => setLoc(current());
    listeners.add(fn);
    return () => void listeners.delete(fn);
  }, []);
  return loc;
}

/** A link click handled by the router (modifier keys keep the browser's behaviour). */
export function onLinkClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element).closest('a');
  if (!a || a.origin !== location.origin || !a.pathname.startsWith(BASE) || a.target) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
}

export const flagHref = (name: string) => `${BASE}flags/${encodeURIComponent(name)}`;
