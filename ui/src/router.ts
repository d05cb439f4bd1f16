/** A tiny History API router for paths under /ui/. */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/ui/';

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((fn) => fn()));

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((fn) => fn());
  window.scrollTo(0, 0);
}

export interface Location {
  /** Path below /ui/, without leading slash ('' for the flags list). */
  path: string;
  query: URLSearchParams;
}

const current = (): Location => ({
  path: location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '',
  query: new URLSearchParams(location.search),
});

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
