/**
 * Review policies of the environments (docs/change-requests.md, "Protecting an environment"): shown
 * on the organization page; an organization-wide Admin key edits them.
 */
import { useEffect, useState } from 'preact/hooks';
import { gql } from '../api';
import { Field, Loading, messageOf, Status, useLoad } from '../components';
import { useSession } from '../session';

interface Policy {
  environment: string;
  requiredApprovals: number;
  allowSelfApproval: boolean;
  allowBypass: boolean;
}

const FIELDS = 'environment requiredApprovals allowSelfApproval allowBypass';

function PolicyRow({ policy, canEdit, onSaved }: { policy: Policy; canEdit: boolean; onSaved: () => void }) {
  const [draft, setDraft] = useState(policy);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const env = policy.environment;
  // The saved policy read back: the form shows it, and the row (and its "Saved" message) stays.
  useEffect(() => setDraft(policy), [policy.requiredApprovals, policy.allowSelfApproval, policy.allowBypass]);
  const changed = draft.requiredApprovals !== policy.requiredApprovals || draft.allowSelfApproval !== policy.allowSelfApproval || draft.allowBypass !== policy.allowBypass;
  const save = async (e: Event) => {
    e.preventDefault();
    setStatus(null);
    if (!Number.isInteger(draft.requiredApprovals) || draft.requiredApprovals < 0 || draft.requiredApprovals > 5) return setError('Required approvals must be a whole number from 0 to 5.');
    try {
      await gql(`mutation($s: String!, $i: EnvironmentPolicyInput!) { setEnvironmentPolicy(stage: $s, input: $i) { ${FIELDS} } }`, {
        s: env,
        i: { requiredApprovals: draft.requiredApprovals, allowSelfApproval: draft.allowSelfApproval, allowBypass: draft.allowBypass },
      });
      setError(null);
      setStatus(`Saved the policy of ${env}.`);
      onSaved();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const summary = policy.requiredApprovals === 0
    ? 'Not protected: direct changes apply at once.'
    : `Protected: changes need ${policy.requiredApprovals} approval${policy.requiredApprovals === 1 ? '' : 's'}${policy.allowSelfApproval ? ' (the author may approve)' : ''}${policy.allowBypass ? '; an Admin may bypass with a reason' : ''}.`;
  return (
    <li>
      <form class="row inline end" onSubmit={save} novalidate aria-label={`Review policy of ${env}`}>
        <span class="name">{env}</span>
        <Field label="Required approvals" srSuffix={` (${env})`} error={error}>
          {(p) => (
            <input {...p} type="number" min={0} max={5} step={1} disabled={!canEdit} value={draft.requiredApprovals}
              onInput={(e) => { setError(null); setDraft({ ...draft, requiredApprovals: Number(e.currentTarget.value) }); }} />
          )}
        </Field>
        <div class="checks">
        <label class="check">
          <input type="checkbox" disabled={!canEdit} checked={draft.allowSelfApproval} onChange={(e) => setDraft({ ...draft, allowSelfApproval: e.currentTarget.checked })} />
          Author may approve<span class="sr-only"> ({env})</span>
        </label>
        <label class="check">
          <input type="checkbox" disabled={!canEdit} checked={draft.allowBypass} onChange={(e) => setDraft({ ...draft, allowBypass: e.currentTarget.checked })} />
          Admin may bypass<span class="sr-only"> ({env})</span>
        </label>
        </div>
        {canEdit && <button type="submit" class="primary" disabled={!changed}>Save policy</button>}
      </form>
      <p class="hint">{summary}</p>
      <Status text={status} />
    </li>
  );
}

export function PolicyCard() {
  const s = useSession();
  const envs = s.environments;
  const { data, error, loading, reload } = useLoad(async () => {
    if (envs.length === 0) return [] as Policy[];
    const vars = envs.map((_, i) => `$s${i}: String!`).join(', ');
    const fields = envs.map((_, i) => `p${i}: environmentPolicy(stage: $s${i}) { ${FIELDS} }`).join(' ');
    const r = await gql<Record<string, Policy>>(`query(${vars}) { ${fields} }`, Object.fromEntries(envs.map((e, i) => [`s${i}`, e])));
    return envs.map((_, i) => r[`p${i}`]);
  }, [envs.join('\n')]);
  return (
    <section class="card" aria-labelledby="policies-h">
      <h2 id="policies-h">Review policies</h2>
      <p class="hint">
        In a protected environment (1 or more required approvals), direct changes that would change what evaluation answers there are refused:
        they are proposed as change requests and applied once approved. Only an organization-wide Admin key changes a policy.
      </p>
      <Loading error={error} loading={loading} />
      {data && (
        <ul class="names">
          {data.map((p) => <PolicyRow key={p.environment} policy={p} canEdit={s.can.admin} onSaved={reload} />)}
        </ul>
      )}
    </section>
  );
}
