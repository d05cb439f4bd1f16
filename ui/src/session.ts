/** What the signed-in key is and may do, shared by every page. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Abilities, ManagementKey } from './api';

export interface Session {
  viewer: ManagementKey;
  can: Abilities;
  environments: string[];
  applications: string[];
  /** The server's schema has the audit log (docs/audit.md). */
  hasAudit: boolean;
  /** Reloads environments and applications after a change. */
  refreshOrg: () => Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);
export const useSession = (): Session => useContext(SessionContext)!;
