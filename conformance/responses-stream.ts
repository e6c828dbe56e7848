// The Responses streaming grammar, as a checker: given every event of one stream, in order, it answers
// what is wrong (nothing, for a good stream). Used by the tests and the conformance kit.
//   response.created → response.in_progress → items* → exactly one of completed / incomplete / failed
//   item: output_item.added → (content_part.added → output_text.delta* → output_text.done → content_part.done)*
//         → output_item.done; a function call's arguments stream between its added and done.
// Every event has `sequence_number`, strictly increasing from 0; output indexes count up from 0.

interface AnyEvent {
  type: string;
  sequence_number?: number;
  output_index?: number;
  item_id?: string;
  content_index?: number;
  item?: { id?: string; type?: string };
  delta?: unknown;
  text?: unknown;
}

const TERMINAL = ['response.completed', 'response.incomplete', 'response.failed'];

export function checkResponseStream(events: AnyEvent[], options: { from?: number } = {}): string[] {
  const problems: string[] = [];
  const problem = (index: number, message: string) => problems.push(`event ${index} (${events[index]?.type}): ${message}`);
  let expected = options.from ?? 0;
  const resumed = options.from !== undefined && options.from > 0;
  const open = new Map<number, { id: string | undefined; type: string | undefined; part: number | undefined; text: string }>();
  let nextIndex = 0;
  let ended = false;
  events.forEach((event, index) => {
    if (event.sequence_number !== expected) problem(index, `sequence_number ${event.sequence_number}, expected ${expected}`);
    expected = (event.sequence_number ?? expected) + 1;
    if (ended) problem(index, 'an event after the terminal one');
    if (!resumed && index === 0 && event.type !== 'response.created') problem(index, 'the first event must be response.created');
    if (!resumed && index === 1 && event.type !== 'response.in_progress' && event.type !== 'response.queued') problem(index, 'the second event must be response.in_progress');
    const slot = event.output_index === undefined ? undefined : open.get(event.output_index);
    // A resumed stream may begin inside an item it never saw added: nothing is known of that item.
    if (resumed && event.output_index !== undefined && !slot && event.type !== 'response.output_item.added') return;
    switch (event.type) {
      case 'response.output_item.added':
        if (!resumed && event.output_index !== nextIndex) problem(index, `output_index ${event.output_index}, expected ${nextIndex}`);
        nextIndex = (event.output_index ?? nextIndex) + 1;
        open.set(event.output_index!, { id: event.item?.id, type: event.item?.type, part: undefined, text: '' });
        break;
      case 'response.content_part.added':
        if (!slot) problem(index, 'a content part of an item not open');
        else if (slot.type !== 'message') problem(index, 'a content part of an item that is not a message');
        else if (event.item_id !== slot.id) problem(index, `item_id ${event.item_id} is not ${slot.id}`);
        else slot.part = event.content_index;
        break;
      case 'response.output_text.delta':
        if (!slot || slot.part === undefined || slot.part !== event.content_index || event.item_id !== slot.id) problem(index, 'a text delta outside an open content part');
        else slot.text += typeof event.delta === 'string' ? event.delta : '';
        break;
      case 'response.output_text.done':
        if (!slot || slot.part !== event.content_index) problem(index, 'text done outside an open content part');
        else if (!resumed && event.text !== slot.text) problem(index, 'the done text is not the deltas joined');
        break;
      case 'response.content_part.done':
        if (!slot || slot.part !== event.content_index) problem(index, 'content part done that was not open');
        else slot.part = undefined;
        break;
      case 'response.function_call_arguments.delta':
      case 'response.function_call_arguments.done':
        if (!slot || slot.type !== 'function_call' || event.item_id !== slot.id) problem(index, 'function call arguments outside an open function_call item');
        break;
      case 'response.output_item.done':
        if (!slot && !resumed) problem(index, 'an item done that was not added');
        else if (slot?.part !== undefined) problem(index, 'an item done with a content part still open');
        open.delete(event.output_index!);
        break;
      case 'response.created':
      case 'response.in_progress':
      case 'response.queued':
        break;
      default:
        if (TERMINAL.includes(event.type)) {
          if (open.size > 0) problem(index, 'the response ended with items still open');
          ended = true;
        } else problem(index, 'an unknown event type');
    }
  });
  if (!ended) problems.push('the stream has no terminal event (completed, incomplete or failed)');
  return problems;
}
