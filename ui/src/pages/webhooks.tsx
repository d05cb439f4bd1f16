/**
 * Webhooks (docs/webhooks.md): the organization's endpoints (create with the secret shown once,
 * enable or disable, rotate the secret, send a test, delete) and each endpoint's deliveries, with
 * Replay. Admin only, like the API.
 */
import { useState } from 'preact/hooks';
import { gql, WEBHOOK_DELIVERY_FIELDS, WEBHOOK_FIELDS, type WebhookDelivery as Delivery, type WebhookEndpoint as Endpoint } from '../api';
import { ConfirmButton, DataTable, Field, Loading, messageOf, RevealOnce, Status, useLoad, when } from '../components';
import { useSession } from '../session';

const PAGE = 100;

function NewEndpointForm({ onCreated, onCancel }: { onCreated: (url: string, secret: string) => void; onCancel: () => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState('*');
  const [description, setDescription] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const submit = async (e: Event) => {
    e.preventDefault();
    const list = events.split(/[\s,]+/).filter(Boolean);
    const errs: Record<string, string> = {};
    if (!url.trim()) errs.url = 'Enter the https URL that receives the messages.';
    if (list.length === 0) errs.events = "Enter at least one event: an audit action (flag.create), a prefix (flag.*), or * for all.";
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    try {
      const r = await gql<{ createWebhook: { secret: string } }>('mutation($i: WebhookEndpointInput!) { createWebhook(input: $i) { secret endpoint { id } } }', {
        i: { url: url.trim(), events: list, description: description.trim() || null },
      });
      onCreated(url.trim(), r.createWebhook.secret);
    } catch (err) {
      const msg = messageOf(err);
      if (/url/i.test(msg)) setErrors({ url: msg });
      else if (/event|pattern/i.test(msg)) setErrors({ events: msg });
      else setErrors({ form: msg });
    }
  };
  return (
    <form class="card" onSubmit={submit} novalidate aria-labelledby="new-webhook-h">
      <h2 id="new-webhook-h">New endpoint</h2>
      <Field label="URL" error={errors.url} hint="https only; private and loopback addresses are refused.">
        {(p) => <input {...p} type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} autoComplete="off" placeholder="https://hooks.example.com/vexil" />}
      </Field>
      <Field label="Events" error={errors.events} hint="Audit actions separated by commas: flag.create, flag.*, change.*, or * for every change.">
        {(p) => <input {...p} value={events} onInput={(e) => setEvents(e.currentTarget.value)} autoComplete="off" />}
      </Field>
      <Field label="Description">{(p) => <input {...p} value={description} onInput={(e) => setDescription(e.currentTarget.value)} autoComplete="off" />}</Field>
      {errors.form && <p class="error" role="alert">{errors.form}</p>}
      <div class="actions">
        <button type="submit" class="primary">Create</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

function Deliveries({ endpoint }: { endpoint: Endpoint }) {
  const { data, error, loading, reload } = useLoad(
    () => gql<{ webhook: { deliveries: Delivery[] } }>(`query($id: ID!, $n: Int) { webhook(id: $id) { deliveries(first: $n) { ${WEBHOOK_DELIVERY_FIELDS} } } }`, { id: endpoint.id, n: PAGE }).then((d) => d.webhook.deliveries),
    [endpoint.id],
  );
  const [status, setStatus] = useState<string | null>(null);
  const replay = async (d: Delivery) => {
    try {
      await gql('mutation($id: ID!, $m: String!) { replayWebhookMessage(id: $id, messageId: $m) }', { id: endpoint.id, m: d.messageId });
      setStatus(`Message ${d.messageId} queued again.`);
      setTimeout(reload, 1000);
    } catch (err) {
      setStatus(messageOf(err));
    }
  };
  return (
    <section class="card" aria-labelledby="deliveries-h">
      <div class="title-row">
        <h2 id="deliveries-h">Deliveries to {endpoint.url}</h2>
        <button type="button" onClick={reload}>Refresh</button>
      </div>
      <Status text={status} />
      <Loading error={error} loading={loading} />
      {data && data.length === 0 && <p>No attempt yet.</p>}
      {data && data.length > 0 && (
        <DataTable caption={`Delivery attempts to ${endpoint.url}, oldest first`} columns={['When', 'Event', 'Message', 'Attempt', 'Status', 'Duration', 'Error']} actions>
          {[...data].reverse().map((d) => (
            <tr key={d.id}>
              <td>{when(d.at)}</td>
              <th scope="row" id={`delivery-${d.id}`}>{d.type}</th>
              <td class="mono">{d.messageId}</td>
              <td>{d.attempt}</td>
              <td>{d.status === null ? '—' : d.status >= 200 && d.status < 300 ? <span class="badge on">{d.status}</span> : <span class="badge off">{d.status}</span>}</td>
              <td>{d.durationMs} ms</td>
              <td>{d.error ?? ''}</td>
              <td class="row-actions">
                <button type="button" aria-describedby={`delivery-${d.id}`} onClick={() => replay(d)}>Replay</button>
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}

export function WebhooksPage() {
  const s = useSession();
  const { data, error, loading, reload } = useLoad(() => gql<{ webhooks: Endpoint[] }>(`{ webhooks { ${WEBHOOK_FIELDS} } }`).then((d) => d.webhooks), []);
  const [creating, setCreating] = useState(false);
  const [revealed, setRevealed] = useState<{ title: string; value: string } | null>(null);
  const [rowError, setRowError] = useState<{ id: string; message: string } | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [shown, setShown] = useState<string | null>(null);

  if (!s.can.admin) {
    return (
      <main id="main">
        <h1 tabIndex={-1}>Webhooks</h1>
        <p>Managing webhooks needs the Admin permission on an organization-wide key. This key cannot do it.</p>
      </main>
    );
  }
  const run = async (e: Endpoint, what: 'test' | 'rotate' | 'toggle' | 'delete') => {
    setRowError(null);
    setStatus(null);
    try {
      if (what === 'test') {
        const r = await gql<{ sendWebhookTest: string }>('mutation($id: ID!) { sendWebhookTest(id: $id) }', { id: e.id });
        setStatus(`Test message ${r.sendWebhookTest} queued for ${e.url}.`);
        setShown(e.id);
      } else if (what === 'rotate') {
        const r = await gql<{ rotateWebhookSecret: { secret: string } }>('mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }', { id: e.id });
        setRevealed({ title: `New signing secret of ${e.url} (the old one signs too for 24 hours)`, value: r.rotateWebhookSecret.secret });
      } else if (what === 'toggle') {
        await gql('mutation($id: ID!, $i: WebhookEndpointInput!) { updateWebhook(id: $id, input: $i) { id } }', {
          id: e.id,
          i: { url: e.url, events: e.events, description: e.description, enabled: !e.enabled },
        });
      } else {
        await gql('mutation($id: ID!) { deleteWebhook(id: $id) }', { id: e.id });
        if (shown === e.id) setShown(null);
      }
      reload();
    } catch (err) {
      setRowError({ id: e.id, message: messageOf(err) });
    }
  };
  const selected = data?.find((e) => e.id === shown) ?? null;
  return (
    <main id="main">
      <div class="title-row">
        <h1 tabIndex={-1}>Webhooks</h1>
        {!creating && <button type="button" class="primary" onClick={() => { setCreating(true); setRevealed(null); }}>New endpoint</button>}
      </div>
      <p>Each change recorded in the audit log is sent, signed (Standard Webhooks), to the endpoints that subscribe to its action, in commit order, retried for three days.</p>
      {revealed && <RevealOnce title={revealed.title} label="Signing secret" hint="Copy this signing secret now and give it to the receiver: it is shown only this once. Receivers verify messages with it (Standard Webhooks)." value={revealed.value} onDone={() => setRevealed(null)} />}
      {creating && (
        <NewEndpointForm
          onCancel={() => setCreating(false)}
          onCreated={(url, secret) => {
            setCreating(false);
            setRevealed({ title: `Endpoint ${url} created`, value: secret });
            reload();
          }}
        />
      )}
      <Status text={status} />
      <Loading error={error} loading={loading} />
      {data && data.length === 0 && !creating && <p>No endpoint yet.</p>}
      {data && data.length > 0 && (
        <DataTable caption="Webhook endpoints of the organization" columns={['URL', 'Events', 'Status', 'Created']} actions>
          {data.map((e) => (
            <tr key={e.id}>
              <th scope="row" id={`webhook-${e.id}`}>
                <span class="mono">{e.url}</span>
                {e.description && <span class="hint"> {e.description}</span>}
              </th>
              <td class="mono">{e.events.join(', ')}</td>
              <td>{e.enabled ? <span class="badge on">Enabled</span> : <span class="badge off" title={e.disabledReason ?? undefined}>Disabled{e.disabledReason ? ` (${e.disabledReason})` : ''}</span>}</td>
              <td>{when(e.createdAt)}</td>
              <td class="row-actions">
                <button type="button" aria-describedby={`webhook-${e.id}`} aria-pressed={shown === e.id} onClick={() => setShown(shown === e.id ? null : e.id)}>Deliveries</button>
                <button type="button" aria-describedby={`webhook-${e.id}`} disabled={!e.enabled} onClick={() => run(e, 'test')}>Send test</button>
                <button type="button" aria-describedby={`webhook-${e.id}`} onClick={() => run(e, 'toggle')}>{e.enabled ? 'Disable' : 'Enable'}</button>
                <ConfirmButton label="Rotate secret" question={`Rotate the secret of ${e.url}? The old one keeps signing for 24 hours.`} confirmLabel="Yes, rotate" describedBy={`webhook-${e.id}`} onConfirm={() => run(e, 'rotate')} />
                <ConfirmButton label="Delete" question={`Delete ${e.url} and its pending messages?`} confirmLabel="Yes, delete" danger describedBy={`webhook-${e.id}`} onConfirm={() => run(e, 'delete')} />
                {rowError?.id === e.id && <p class="error" role="alert">{rowError.message}</p>}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
      {selected && <Deliveries key={selected.id} endpoint={selected} />}
    </main>
  );
}
