/**
 * Parquet files joined by copying, not by reading and writing their rows: the output holds each
 * input's pages, dictionaries and Bloom filters byte for byte, in the order given, under one
 * footer that lists all their row groups with their offsets moved. A merge of files that need no
 * de-duplication (`mergeFiles`) is such a concatenation: DuckDB decompressed and compressed every
 * row again for it, on the cores the loads need, and under a long saturating load merges were
 * busy most of the time (see bench/NOTES.md).
 *
 * The footer is Thrift's compact protocol. Only what holds a file position is decoded; every
 * other field is carried over as the bytes it was. Files this cannot join exactly (another
 * schema, page indexes, which hold positions inside the copied bytes, encryption, columns in
 * other files) are refused with `null`, and the caller writes the rows instead.
 */
import { open, type FileHandle } from 'node:fs/promises';

const MAGIC = new Uint8Array([0x50, 0x41, 0x52, 0x31]); // "PAR1"
const TAIL_BYTES = 8; // the footer's length (4 bytes, little-endian) and the magic
const COPY_CHUNK = 4 << 20;

/** Compact protocol types (the low nibble of a field header). */
const T = { BOOL_TRUE: 1, BOOL_FALSE: 2, BYTE: 3, I16: 4, I32: 5, I64: 6, DOUBLE: 7, BINARY: 8, LIST: 9, SET: 10, MAP: 11, STRUCT: 12 } as const;

/** A field as read: its own bytes (value only), or its decoded value when it holds a position. */
interface Field {
  id: number;
  type: number;
  raw?: Uint8Array;
  int?: bigint;
  struct?: Field[];
  list?: { type: number; items: Field[][] };
}

/** Which fields of a struct are decoded (the rest kept as bytes), or refuse the file. */
type Shape = Record<number, 'int' | 'refuse' | { struct: Shape } | { list: Shape }>;

// parquet.thrift: ColumnMetaData 9 data_page_offset, 10 index_page_offset, 11 dictionary_page_offset, 14 bloom_filter_offset.
const COLUMN_META: Shape = { 9: 'int', 10: 'int', 11: 'int', 14: 'int' };
// ColumnChunk 1 file_path (another file), 2 file_offset, 3 meta_data, 4/6 offset/column index (positions inside the pages' area), 8/9 encryption.
const COLUMN_CHUNK: Shape = { 1: 'refuse', 2: 'int', 3: { struct: COLUMN_META }, 4: 'refuse', 5: 'refuse', 6: 'refuse', 7: 'refuse', 8: 'refuse', 9: 'refuse' };
// RowGroup 1 columns, 3 num_rows, 5 file_offset, 7 ordinal.
const ROW_GROUP: Shape = { 1: { list: COLUMN_CHUNK }, 3: 'int', 5: 'int', 7: 'int' };
// FileMetaData 3 num_rows, 4 row_groups, 8/9 encryption.
const FILE_META: Shape = { 3: 'int', 4: { list: ROW_GROUP }, 8: 'refuse', 9: 'refuse' };

/** What this module cannot join exactly: the caller writes the rows instead. */
class Unjoinable extends Error {}

class Reader {
  at = 0;
  constructor(private readonly b: Uint8Array) {}

  byte(): number {
    if (this.at >= this.b.length) throw new Unjoinable('the footer ends early');
    return this.b[this.at++] as number;
  }

  varint(): bigint {
    let value = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      const x = this.byte();
      value |= BigInt(x & 0x7f) << shift;
      if ((x & 0x80) === 0) return value;
    }
    throw new Unjoinable('a varint runs on');
  }

  zigzag(): bigint {
    const v = this.varint();
    return (v >> 1n) ^ -(v & 1n);
  }

  skipBytes(n: number): void {
    if (n < 0 || this.at + n > this.b.length) throw new Unjoinable('the footer ends early');
    this.at += n;
  }

  slice(from: number): Uint8Array {
    return this.b.subarray(from, this.at);
  }

  /** Read past one value of `type`. */
  skip(type: number): void {
    switch (type) {
      case T.BOOL_TRUE:
      case T.BOOL_FALSE:
        return;
      case T.BYTE:
        return this.skipBytes(1);
      case T.I16:
      case T.I32:
      case T.I64:
        this.varint();
        return;
      case T.DOUBLE:
        return this.skipBytes(8);
      case T.BINARY:
        return this.skipBytes(Number(this.varint()));
      case T.LIST:
      case T.SET: {
        const { size, type: element } = this.listHeader();
        // A bool element is one byte.
        if (element === T.BOOL_TRUE || element === T.BOOL_FALSE) return this.skipBytes(size);
        for (let i = 0; i < size; i++) this.skip(element);
        return;
      }
      case T.MAP: {
        const size = Number(this.varint());
        if (size === 0) return;
        const kinds = this.byte();
        for (let i = 0; i < size; i++) {
          this.skip(kinds >> 4);
          this.skip(kinds & 0x0f);
        }
        return;
      }
      case T.STRUCT:
        for (let last = 0; ; ) {
          const header = this.fieldHeader(last);
          if (!header) return;
          this.skip(header.type);
          last = header.id;
        }
      default:
        throw new Unjoinable(`unknown compact type ${type}`);
    }
  }

  listHeader(): { size: number; type: number } {
    const h = this.byte();
    const short = h >> 4;
    return { size: short === 15 ? Number(this.varint()) : short, type: h & 0x0f };
  }

  fieldHeader(last: number): { id: number; type: number } | null {
    const h = this.byte();
    if (h === 0) return null;
    const delta = h >> 4;
    return { id: delta ? last + delta : Number(this.zigzag()), type: h & 0x0f };
  }
}

function readStruct(r: Reader, shape: Shape): Field[] {
  const fields: Field[] = [];
  for (let last = 0; ; ) {
    const header = r.fieldHeader(last);
    if (!header) return fields;
    last = header.id;
    const how = shape[header.id];
    if (how === 'refuse') throw new Unjoinable(`field ${header.id} is not joined by copying`);
    if (how === 'int' && (header.type === T.I16 || header.type === T.I32 || header.type === T.I64)) {
      fields.push({ ...header, int: r.zigzag() });
    } else if (how !== undefined && typeof how === 'object' && 'struct' in how && header.type === T.STRUCT) {
      fields.push({ ...header, struct: readStruct(r, how.struct) });
    } else if (how !== undefined && typeof how === 'object' && 'list' in how && header.type === T.LIST) {
      const { size, type } = r.listHeader();
      if (type !== T.STRUCT) throw new Unjoinable(`field ${header.id} is a list of type ${type}`);
      const items: Field[][] = [];
      for (let i = 0; i < size; i++) items.push(readStruct(r, how.list));
      fields.push({ ...header, list: { type, items } });
    } else if (how !== undefined) {
      throw new Unjoinable(`field ${header.id} has type ${header.type}`);
    } else {
      const from = r.at;
      r.skip(header.type);
      fields.push({ ...header, raw: r.slice(from) });
    }
  }
}

class Writer {
  private parts: number[] = [];
  private chunks: Uint8Array[] = [];

  byte(x: number): void {
    this.parts.push(x);
  }

  bytes(b: Uint8Array): void {
    this.flushParts();
    this.chunks.push(b);
  }

  varint(v: bigint): void {
    let x = v;
    while (x >= 0x80n) {
      this.byte(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    this.byte(Number(x));
  }

  zigzag(v: bigint): void {
    this.varint(v >= 0n ? v << 1n : (-v << 1n) - 1n);
  }

  struct(fields: readonly Field[]): void {
    let last = 0;
    for (const f of fields) {
      const delta = f.id - last;
      if (delta > 0 && delta <= 15) this.byte((delta << 4) | f.type);
      else {
        this.byte(f.type);
        this.zigzag(BigInt(f.id));
      }
      last = f.id;
      if (f.raw) this.bytes(f.raw);
      else if (f.int !== undefined) this.zigzag(f.int);
      else if (f.struct) this.struct(f.struct);
      else if (f.list) {
        const size = f.list.items.length;
        if (size < 15) this.byte((size << 4) | f.list.type);
        else {
          this.byte(0xf0 | f.list.type);
          this.varint(BigInt(size));
        }
        for (const item of f.list.items) this.struct(item);
      }
    }
    this.byte(0);
  }

  result(): Uint8Array {
    this.flushParts();
    const out = new Uint8Array(this.chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }

  private flushParts(): void {
    if (this.parts.length) this.chunks.push(Uint8Array.from(this.parts));
    this.parts = [];
  }
}

const field = (fields: readonly Field[], id: number): Field | undefined => fields.find((f) => f.id === id);

const sameBytes = (a: Uint8Array | undefined, b: Uint8Array | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]));

interface Input {
  path: string;
  handle: FileHandle;
  /** Where the pages end and the footer begins. */
  bodyEnd: number;
  meta: Field[];
}

async function readInput(path: string): Promise<Input> {
  const handle = await open(path, 'r');
  try {
    const size = (await handle.stat()).size;
    if (size < 2 * MAGIC.length + TAIL_BYTES) throw new Unjoinable('not a Parquet file');
    const head = new Uint8Array(MAGIC.length);
    const tail = new Uint8Array(TAIL_BYTES);
    await handle.read(head, 0, head.length, 0);
    await handle.read(tail, 0, tail.length, size - TAIL_BYTES);
    if (!sameBytes(head, MAGIC) || !sameBytes(tail.subarray(4), MAGIC)) throw new Unjoinable('not a Parquet file');
    const footerBytes = new DataView(tail.buffer).getUint32(0, true);
    const bodyEnd = size - TAIL_BYTES - footerBytes;
    if (bodyEnd < MAGIC.length) throw new Unjoinable('a footer longer than its file');
    const footer = new Uint8Array(footerBytes);
    await handle.read(footer, 0, footerBytes, bodyEnd);
    const r = new Reader(footer);
    const meta = readStruct(r, FILE_META);
    if (r.at !== footerBytes) throw new Unjoinable('bytes after the footer');
    return { path, handle, bodyEnd, meta };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Every position a row group of `input` holds, moved by `delta`; false if one lies outside its pages. */
function moveRowGroup(group: Field[], delta: bigint, bodyEnd: number): boolean {
  const inside = (f: Field | undefined) => f?.int === undefined || (f.int >= BigInt(MAGIC.length) && f.int < BigInt(bodyEnd));
  const move = (f: Field | undefined) => {
    if (f?.int !== undefined) f.int += delta;
  };
  const rowGroupOffset = field(group, 5);
  if (!inside(rowGroupOffset)) return false;
  move(rowGroupOffset);
  for (const chunk of field(group, 1)?.list?.items ?? []) {
    const chunkOffset = field(chunk, 2);
    const meta = field(chunk, 3)?.struct;
    if (!meta) return false;
    const positions = [9, 10, 11, 14].map((id) => field(meta, id));
    // A file_offset of 0 is what some writers put there: it points at nothing, so stays.
    if (chunkOffset?.int !== 0n) {
      if (!inside(chunkOffset)) return false;
      move(chunkOffset);
    }
    if (!positions.every(inside)) return false;
    positions.forEach(move);
  }
  return true;
}

/**
 * Join `inputs` (in that order) into a new file at `output`, fsynced; the rows written, or null
 * (nothing written) when they cannot be joined by copying.
 */
export async function concatParquet(inputs: readonly string[], output: string): Promise<{ rows: number } | null> {
  const opened: Input[] = [];
  try {
    for (const path of inputs) opened.push(await readInput(path));
    const first = opened[0];
    if (!first) return null;
    // The same columns in every file (schema, column orders, file metadata), as the one footer says.
    for (const id of [1, 2, 5, 7]) {
      if (!opened.every((f) => sameBytes(field(f.meta, id)?.raw, field(first.meta, id)?.raw))) return null;
    }
    const groups: Field[][] = [];
    let rows = 0n;
    let at = MAGIC.length;
    for (const f of opened) {
      const delta = BigInt(at - MAGIC.length);
      for (const group of field(f.meta, 4)?.list?.items ?? []) {
        if (!moveRowGroup(group, delta, f.bodyEnd)) return null;
        const ordinal = field(group, 7);
        if (ordinal) ordinal.int = BigInt(groups.length);
        groups.push(group);
      }
      rows += field(f.meta, 3)?.int ?? 0n;
      at += f.bodyEnd - MAGIC.length;
    }
    if (groups.length > 0x7fff && groups.some((g) => field(g, 7))) return null;
    const meta = first.meta.map((f) =>
      f.id === 3 ? { ...f, int: rows } : f.id === 4 ? { ...f, list: { type: T.STRUCT, items: groups } } : f,
    );
    const w = new Writer();
    w.struct(meta);
    const footer = w.result();
    await writeJoined(output, opened, footer);
    return { rows: Number(rows) };
  } catch (error) {
    if (error instanceof Unjoinable) return null;
    throw error;
  } finally {
    await Promise.all(opened.map((f) => f.handle.close()));
  }
}

async function writeJoined(output: string, inputs: readonly Input[], footer: Uint8Array): Promise<void> {
  const out = await open(output, 'wx');
  try {
    let at = 0;
    const put = async (b: Uint8Array) => {
      for (let done = 0; done < b.length; ) {
        const { bytesWritten } = await out.write(b, done, b.length - done, at);
        done += bytesWritten;
        at += bytesWritten;
      }
    };
    await put(MAGIC);
    const buffer = new Uint8Array(COPY_CHUNK);
    for (const f of inputs) {
      for (let from = MAGIC.length; from < f.bodyEnd; ) {
        const { bytesRead } = await f.handle.read(buffer, 0, Math.min(COPY_CHUNK, f.bodyEnd - from), from);
        if (bytesRead === 0) throw new Error(`${f.path} shrank while it was joined`);
        await put(buffer.subarray(0, bytesRead));
        from += bytesRead;
      }
    }
    await put(footer);
    const tail = new Uint8Array(TAIL_BYTES);
    new DataView(tail.buffer).setUint32(0, footer.length, true);
    tail.set(MAGIC, 4);
    await put(tail);
    await out.datasync();
  } finally {
    await out.close();
  }
}
