// Reads V8 heap snapshots (`v8.writeHeapSnapshot`, bench/memory-hook.ts): what a snapshot holds by kind and
// constructor (bench/startup.ts), and what grew between two of the same process, by what each object is and
// what holds it (bench/held.ts).
import { readFileSync } from 'node:fs';

interface RawSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** A snapshot's nodes as columns: kind, name and self size per node, and the first strong holder of each. */
interface Nodes {
  count: number;
  kind(node: number): string;
  name(node: number): string;
  size(node: number): number;
  /** The node whose edge reached this one first, or -1 for the roots; weak edges do not count. */
  holder: Int32Array;
  /** The name of that edge (a property name), or `[element]` and the like for unnamed ones. */
  via: string[];
}

/** The snapshot's nodes; their holders only `withHolders` (a pass over every edge). */
function readNodes(file: string, withHolders: boolean): Nodes {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as RawSnapshot;
  const { node_fields: fields, node_types: nodeTypes, edge_fields: edgeFields, edge_types: edgeTypes } = raw.snapshot.meta;
  const width = fields.length;
  const [typeAt, nameAt, sizeAt, edgeCountAt] = ['type', 'name', 'self_size', 'edge_count'].map((field) => fields.indexOf(field)) as [number, number, number, number];
  const edgeWidth = edgeFields.length;
  const [edgeTypeAt, edgeNameAt, toAt] = ['type', 'name_or_index', 'to_node'].map((field) => edgeFields.indexOf(field)) as [number, number, number];
  const count = raw.nodes.length / width;
  const holder = new Int32Array(count).fill(-1);
  const via = new Array<string>(count);
  let edge = 0;
  for (let node = 0; withHolders && node < count; node++) {
    const edges = raw.nodes[node * width + edgeCountAt]!;
    for (let i = 0; i < edges; i++, edge += edgeWidth) {
      const type = edgeTypes[0][raw.edges[edge + edgeTypeAt]!]!;
      const to = raw.edges[edge + toAt]! / width;
      if (type === 'weak' || holder[to] !== -1) continue;
      holder[to] = node;
      via[to] = type === 'element' || type === 'hidden' ? `[${type}]` : String(raw.strings[raw.edges[edge + edgeNameAt]!]);
    }
  }
  return {
    count,
    kind: (node) => nodeTypes[0][raw.nodes[node * width + typeAt]!]!,
    name: (node) => raw.strings[raw.nodes[node * width + nameAt]!]!,
    size: (node) => raw.nodes[node * width + sizeAt]!,
    holder,
    via,
  };
}

const top = (map: Map<string, number>, n: number) =>
  [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, bytes]) => ({ name, mb: bytes / 1048576 }));

/** Self sizes in a heap snapshot, by node kind and, for objects, closures and arrays, by constructor; in MB. */
export function breakDown(file: string) {
  const nodes = readNodes(file, false);
  const byKind = new Map<string, number>();
  const byConstructor = new Map<string, number>();
  let total = 0;
  for (let node = 0; node < nodes.count; node++) {
    const kind = nodes.kind(node);
    const size = nodes.size(node);
    total += size;
    byKind.set(kind, (byKind.get(kind) ?? 0) + size);
    if (kind === 'object' || kind === 'closure' || kind === 'array') {
      const name = `${kind} ${nodes.name(node)}`;
      byConstructor.set(name, (byConstructor.get(name) ?? 0) + size);
    }
  }
  return { totalMb: total / 1048576, byKind: top(byKind, 12), byConstructor: top(byConstructor, 15) };
}

/** What a node is: its kind, and for the kinds that have one a name (a constructor, a function). */
function what(nodes: Nodes, node: number): string {
  const kind = nodes.kind(node);
  if (kind === 'string' || kind === 'number' || kind === 'concatenated string' || kind === 'sliced string') return kind;
  return `${kind} ${nodes.name(node).slice(0, 40)}`.trim();
}

/** Objects of one kind held the same way: what they are, what holds them (its kind and name, and the edge), how many and their bytes. */
export interface Group {
  what: string;
  heldBy: string;
  count: number;
  bytes: number;
}

/** The snapshot's nodes in groups, keyed by what they are and what holds them. */
function tally(file: string): Map<string, Group> {
  const nodes = readNodes(file, true);
  const groups = new Map<string, Group>();
  for (let node = 0; node < nodes.count; node++) {
    const holder = nodes.holder[node]!;
    const heldBy = holder < 0 ? '(root)' : `${what(nodes, holder)} .${nodes.via[node]!.slice(0, 40)}`;
    const kind = what(nodes, node);
    const key = `${kind}\n${heldBy}`;
    const group = groups.get(key) ?? { what: kind, heldBy, count: 0, bytes: 0 };
    group.count += 1;
    group.bytes += nodes.size(node);
    groups.set(key, group);
  }
  return groups;
}

/**
 * What `after` holds beyond `before` (snapshots of one process), per item: the total, and the groups that
 * grew most, their count and bytes per item. A snapshot is taken after a full collection, so both count
 * live objects only.
 */
export function growthPerItem(before: string, after: string, items: number, rows = 20): { bytes: number; objects: number; groups: Group[] } {
  const base = tally(before);
  const grown = tally(after);
  const sum = (groups: Iterable<Group>, field: 'count' | 'bytes') => [...groups].reduce((total, group) => total + group[field], 0);
  const groups = [...grown.entries()].map(([key, group]) => ({
    what: group.what,
    heldBy: group.heldBy,
    count: (group.count - (base.get(key)?.count ?? 0)) / items,
    bytes: (group.bytes - (base.get(key)?.bytes ?? 0)) / items,
  }));
  return {
    bytes: (sum(grown.values(), 'bytes') - sum(base.values(), 'bytes')) / items,
    objects: (sum(grown.values(), 'count') - sum(base.values(), 'count')) / items,
    groups: groups.sort((a, b) => b.bytes - a.bytes).slice(0, rows),
  };
}
