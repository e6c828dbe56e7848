// What the person does when a run waits for them, one view per kind of PendingAction: client-side tools
// to run here and server-side calls to approve or deny, answered together. A new kind of PendingAction
// adds its view here; the mapped type below makes the compiler ask for it.
import type { FunctionComponent } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Schemas } from '../api.ts';
import { display, fieldsOf, missingRequired, parseArguments, resultText, type Field } from '../forms/schema.ts';
import { prettyJson } from '../ui.tsx';
import type { ActionAnswer, PendingAction, ToolCall } from './transcript.ts';

export type { ActionAnswer } from './transcript.ts';

export interface ActionProps<A extends PendingAction> {
  action: A;
  /** Done already (answered here, or seen in a replay): shown, not asked. */
  settled: boolean;
  /** Tool definitions by name, for the forms; the agent's own and the team members'. */
  tools: Map<string, Schemas['FunctionTool']>;
  /** Sends the answer, and the run goes on. Absent where nothing can be answered (a replay). */
  answer?: (answer: ActionAnswer) => void;
  busy?: boolean;
}

/** Numbers as numbers, strings by their format, enums (read-only here) as text. The cast: Preact types inputs as a union keyed by a literal `type`. */
function inputTypeOf(field: Field): 'text' {
  return (field.type === 'number' || field.type === 'integer' ? 'number' : field.type === 'enum' ? 'text' : field.inputType) as 'text';
}

/** One call's arguments as a read-only form built from the tool's parameters, and a field for its result. */
function CallFields({ call, tool, settled, value, onInput, autoFocus }: {
  call: ToolCall;
  tool: Schemas['FunctionTool'] | undefined;
  settled: boolean;
  value: string;
  onInput: (text: string) => void;
  autoFocus: boolean;
}) {
  const fields = fieldsOf(tool?.function.parameters);
  const { values, error } = parseArguments(call.function.arguments);
  const missing = missingRequired(fields, values);
  const resultRef = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    if (autoFocus) resultRef.current?.focus();
  }, [autoFocus]);
  const base = `call-${call.id}`;
  return (
    <fieldset class="tool-call-form">
      <legend>
        <code>{call.function.name}</code>
        {tool?.function.description && <span class="muted"> {tool.function.description}</span>}
      </legend>
      {error && <p class="warning">{error} The model wrote: <code>{call.function.arguments}</code></p>}
      {!error && fields.length === 0 && (
        <pre class="json" aria-label="Arguments">
          {prettyJson(call.function.arguments)}
        </pre>
      )}
      {fields.map((field) => {
        const id = `${base}-arg-${field.name}`;
        const shown = display(values[field.name], field.type);
        return (
          <div class="field" key={field.name}>
            <label for={id}>
              {field.label}
              {field.required && <span class="muted"> (required)</span>}
            </label>
            {field.type === 'boolean' ? (
              <input id={id} type="checkbox" checked={values[field.name] === true} disabled />
            ) : field.type === 'json' ? (
              <textarea id={id} class="code" rows={Math.min(8, shown.split('\n').length)} readOnly value={shown} />
            ) : (
              <input id={id} readOnly type={inputTypeOf(field)} value={shown} />
            )}
            {field.description && <p class="hint">{field.description}</p>}
          </div>
        );
      })}
      {missing.length > 0 && <p class="warning">The call leaves out {missing.join(', ')}, which the parameters require.</p>}
      {!settled && (
        <div class="field">
          <label for={`${base}-result`}>Result of {call.function.name}</label>
          <textarea
            id={`${base}-result`}
            ref={resultRef}
            class="code"
            rows={3}
            required
            spellcheck={false}
            placeholder='{"temperature_c": 18}'
            aria-describedby={`${base}-result-hint`}
            value={value}
            onInput={(event) => onInput(event.currentTarget.value)}
          />
          <p class="hint" id={`${base}-result-hint`}>
            What the tool answers: JSON or text. It goes back to the model as the tool's message.
          </p>
        </div>
      )}
    </fieldset>
  );
}

type Decision = { decision: 'approve' | 'deny'; reason: string };

/** A server-side call waiting for approval: its arguments, approve or deny, and a reason for the model. */
function ApprovalFields({ call, approval, settled, value, onInput, autoFocus }: {
  call: ToolCall;
  approval: Schemas['ApprovalRequest'];
  settled: boolean;
  value: Decision;
  onInput: (value: Decision) => void;
  autoFocus: boolean;
}) {
  const firstRef = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (autoFocus) firstRef.current?.focus();
  }, [autoFocus]);
  const base = `approval-${call.id}`;
  return (
    <fieldset class="tool-call-form">
      <legend>
        Approve <code>{approval.name}</code>
        {approval.mcp && <span class="muted"> on the MCP server {approval.mcp.server}</span>}?
      </legend>
      <pre class="json" aria-label="Arguments">
        {prettyJson(call.function.arguments)}
      </pre>
      {!settled && (
        <>
          <div class="field" role="radiogroup" aria-label={`Decision on ${approval.name}`}>
            <label>
              <input ref={firstRef} type="radio" name={base} value="approve" checked={value.decision === 'approve'} onChange={() => onInput({ ...value, decision: 'approve' })} /> Approve
            </label>
            <label>
              <input type="radio" name={base} value="deny" checked={value.decision === 'deny'} onChange={() => onInput({ ...value, decision: 'deny' })} /> Deny
            </label>
          </div>
          <div class="field">
            <label for={`${base}-reason`}>Reason (optional; a denial's reason goes to the model)</label>
            <input id={`${base}-reason`} type="text" maxLength={2000} value={value.reason} onInput={(event) => onInput({ ...value, reason: event.currentTarget.value })} />
          </div>
        </>
      )}
    </fieldset>
  );
}

function ClientToolsAction({ action, settled, tools, answer, busy }: ActionProps<Extract<PendingAction, { type: 'client_tools' }>>) {
  const [results, setResults] = useState<Record<string, string>>({});
  const [decisions, setDecisions] = useState<Record<string, Decision>>({});
  const asked = !settled && answer !== undefined;
  const names = action.calls.map((call) => call.function.name).join(', ');
  const approvals = new Map(action.approvals.map((approval) => [approval.tool_call_id, approval]));
  const clientCalls = action.calls.filter((call) => !approvals.has(call.id));
  const decisionOf = (id: string): Decision => decisions[id] ?? { decision: 'approve', reason: '' };
  const what = [
    clientCalls.length > 0 ? `this page to run ${clientCalls.length === 1 ? 'a client-side tool' : `${clientCalls.length} client-side tools`}` : '',
    approvals.size > 0 ? `for approval of ${approvals.size === 1 ? 'a tool call' : `${approvals.size} tool calls`}` : '',
  ].filter(Boolean).join(' and ');
  // Once answered, the tool cards above carry the arguments and results; a line says who answered.
  if (settled) {
    return (
      <p class="notice info">
        This page {approvals.size > 0 && clientCalls.length === 0 ? 'decided on' : 'answered'} {names}
        {action.from ? ` for ${action.from.name}` : ''}.
      </p>
    );
  }
  return (
    <form
      class="action"
      aria-label={clientCalls.length > 0 ? 'Client-side tool request' : 'Approval request'}
      onSubmit={(event) => {
        event.preventDefault();
        answer?.({
          results: clientCalls.map((call) => ({ callId: call.id, output: resultText(results[call.id] ?? '') })),
          approvals: [...approvals.keys()].map((id) => {
            const { decision, reason } = decisionOf(id);
            return { tool_call_id: id, decision, ...(reason.trim() ? { reason: reason.trim() } : {}) };
          }),
        });
      }}
    >
      <p class="action-title">
        {action.from ? `${action.from.name} asks` : 'The agent asks'} {what}
        {!asked && " (replayed: the answer is not among the run's events)"}
      </p>
      {action.calls.map((call, index) => {
        const approval = approvals.get(call.id);
        return approval ? (
          <ApprovalFields
            key={call.id}
            call={call}
            approval={approval}
            settled={!asked}
            value={decisionOf(call.id)}
            onInput={(value) => setDecisions((current) => ({ ...current, [call.id]: value }))}
            autoFocus={asked && index === 0}
          />
        ) : (
        <CallFields
          key={call.id}
          call={call}
          tool={tools.get(call.function.name)}
          settled={!asked}
          value={results[call.id] ?? ''}
          onInput={(text) => setResults((current) => ({ ...current, [call.id]: text }))}
          autoFocus={asked && index === 0}
        />
        );
      })}
      {asked && (
        <button type="submit" class="primary" disabled={busy}>
          {clientCalls.length === 0 ? 'Send the decision' : `Send ${action.calls.length === 1 ? 'the result' : 'the results'}`}
        </button>
      )}
    </form>
  );
}

export const actionViews: { [K in PendingAction['type']]: FunctionComponent<ActionProps<Extract<PendingAction, { type: K }>>> } = {
  client_tools: ClientToolsAction,
};

export function ActionView(props: ActionProps<PendingAction>) {
  const View = actionViews[props.action.type] as FunctionComponent<ActionProps<PendingAction>>;
  return <View {...props} />;
}
