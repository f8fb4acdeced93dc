"""The Arrow IPC body of ``CreateTable``, decoded under a cap on its decoded size.

A small IPC stream can decode to a huge table: compressed buffers (Arrow columnar format,
"Compression": LZ4_FRAME or ZSTD, each buffer prefixed by its uncompressed length as a
little-endian int64, ``-1`` for a buffer left uncompressed), a dictionary-encoded column whose
few long values are repeated by millions of indices ("Dictionary-encoded Layout"), a run-end
encoded column of one run over 2^31 rows ("Run-End Encoded Layout"). :func:`decode_arrow_body`
reads the stream's message metadata (the flatbuffers of ``Message.fbs``) *before* pyarrow
decodes any buffer, adds up what each record or dictionary batch decodes to, and refuses the
stream past the cap; then it computes what expanding dictionary and run-end encoded columns
to plain ones takes, refuses that past the cap too, and returns a plain table.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from deltalog.catalog.clients.rest import protocol as p
from deltalog.server.lance.bodies import PayloadTooLarge
from deltalog.server.lance.service import RestError

if TYPE_CHECKING:
    import pyarrow as pa

#: ``MessageHeader`` union types (Message.fbs).
_SCHEMA, _DICTIONARY_BATCH, _RECORD_BATCH = 1, 2, 3


class _Flatbuffer:
    """Just enough of the flatbuffers wire format to read Arrow's ``Message`` tables: every
    read is bounds-checked (a hostile stream's metadata is refused, never trusted)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def _unpack(self, fmt: str, pos: int) -> Any:
        if pos < 0 or pos + struct.calcsize(fmt) > len(self.data):
            raise ValueError("metadata offset out of bounds")
        return struct.unpack_from(fmt, self.data, pos)[0]

    def root(self) -> int:
        return int(self._unpack("<I", 0))

    def _field(self, table: int, index: int) -> int | None:
        vtable = table - int(self._unpack("<i", table))
        vtable_size = int(self._unpack("<H", vtable))
        slot = 4 + 2 * index
        if slot + 2 > vtable_size:
            return None
        offset = int(self._unpack("<H", vtable + slot))
        return table + offset if offset else None

    def scalar(self, table: int, index: int, fmt: str, default: int) -> int:
        pos = self._field(table, index)
        return default if pos is None else int(self._unpack(fmt, pos))

    def table(self, table: int, index: int) -> int | None:
        pos = self._field(table, index)
        return None if pos is None else pos + int(self._unpack("<I", pos))

    def structs(self, table: int, index: int, size: int) -> list[tuple[int, int]]:
        """A vector of structs of two int64s (``FieldNode``, ``Buffer``)."""
        start = self.table(table, index)
        if start is None:
            return []
        count = int(self._unpack("<I", start))
        if start + 4 + count * size > len(self.data):
            raise ValueError("metadata vector out of bounds")
        return [struct.unpack_from("<qq", self.data, start + 4 + i * size) for i in range(count)]


#: What each record or dictionary batch counts for beyond its buffers (its bookkeeping in
#: memory: a stream of a million empty batches is not free).
BATCH_OVERHEAD = 1024


def _batch_size(fb: _Flatbuffer, batch: int, body: memoryview) -> int:
    """What one ``RecordBatch`` decodes to: its buffers' uncompressed lengths, and at least a
    byte per value of every field node (a column of nulls has no buffers at all)."""
    compressed = fb.table(batch, 3) is not None  # RecordBatch.compression
    nodes = fb.structs(batch, 1, 16)
    buffers = fb.structs(batch, 2, 16)
    total = 0
    for offset, length in buffers:
        if offset < 0 or length < 0 or offset + length > len(body):
            raise ValueError("a buffer lies outside the message body")
        if compressed and length >= 8:
            (uncompressed,) = struct.unpack_from("<q", body, offset)
            total += length - 8 if uncompressed == -1 else uncompressed
            if uncompressed < -1:
                raise ValueError("negative uncompressed buffer length")
        else:
            total += length
    values = sum(max(length, 0) for length, _ in nodes)
    return max(total, values)


def _check_messages(data: bytes, max_decoded_bytes: int) -> None:
    import pyarrow as pa

    reader = pa.ipc.MessageReader.open_stream(pa.BufferReader(data))
    decoded = 0
    while True:
        try:
            message = reader.read_next_message()
        except StopIteration:
            return
        fb = _Flatbuffer(message.metadata.to_pybytes())
        root = fb.root()
        kind = fb.scalar(root, 1, "<B", 0)  # Message.header_type
        header = fb.table(root, 2)  # Message.header
        if kind == _SCHEMA or header is None:
            continue
        batch = fb.table(header, 1) if kind == _DICTIONARY_BATCH else header
        if kind not in (_DICTIONARY_BATCH, _RECORD_BATCH) or batch is None:
            raise ValueError(f"unexpected message type {kind} in a stream")
        body = memoryview(message.body) if message.body is not None else memoryview(b"")
        decoded += _batch_size(fb, batch, body) + BATCH_OVERHEAD
        if decoded > max_decoded_bytes:
            raise PayloadTooLarge(
                f"the Arrow body decodes to more than {max_decoded_bytes} bytes "
                "(--max-decoded-bytes)"
            )


def _value_sizes(values: pa.Array) -> pa.Array | int:
    """The bytes each value of ``values`` takes when expanded: an int for every value of a
    fixed-width type, an array of sizes for (large) strings and binaries."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = values.type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return pc.add(pc.binary_length(values).fill_null(0), 4)
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return pc.add(pc.binary_length(values).fill_null(0), 8)
    if pa.types.is_boolean(t):
        return 1
    try:
        return max(t.bit_width // 8, 1)
    except ValueError:
        raise RestError(
            p.INVALID_INPUT,
            f"a dictionary or run-end encoded column of {t} is not supported in CreateTable: "
            "send it plain",
        ) from None


def _expanded_size(array: pa.Array) -> int:
    """What ``array`` (one chunk) takes once its dictionary / run-end encoding is expanded,
    computed from its values' sizes without expanding it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(array.type):
        sizes = _value_sizes(array.dictionary)
        if isinstance(sizes, int):
            return sizes * len(array)
        taken = pc.take(sizes, array.indices).fill_null(0)
        return int(pc.sum(taken).as_py() or 0)
    if pa.types.is_run_end_encoded(array.type):
        ends = array.run_ends.to_numpy(zero_copy_only=False).astype("int64")
        runs = ends.copy()
        runs[1:] -= ends[:-1]
        sizes = _value_sizes(array.values)
        if isinstance(sizes, int):
            return sizes * len(array)
        per_value = sizes.to_numpy(zero_copy_only=False).astype("int64")
        return int((per_value[: len(runs)] * runs).sum())
    return int(array.nbytes)


def _encoded(t: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t))


def _nested_encoding(t: pa.DataType) -> bool:
    """Whether a dictionary or run-end encoded type hides inside ``t``'s children."""
    children = [t.field(i).type for i in range(t.num_fields)] if t.num_fields else []
    return any(_encoded(c) or _nested_encoding(c) for c in children)


def _read_checked(data: bytes, max_decoded_bytes: int) -> pa.Table:
    import pyarrow as pa

    try:
        _check_messages(data, max_decoded_bytes)
        table = pa.ipc.open_stream(data).read_all()
    except (pa.ArrowInvalid, OSError, ValueError, struct.error) as e:
        raise RestError(p.INVALID_INPUT, f"the body is not an Arrow IPC stream: {e}") from e
    expanded = 0
    for field, column in zip(table.schema, table.columns, strict=True):
        if _nested_encoding(field.type):
            raise RestError(
                p.INVALID_INPUT,
                f"column {field.name!r}: a dictionary or run-end encoding nested inside "
                f"{field.type} is not supported in CreateTable: send it plain",
            )
        expanded += sum(_expanded_size(chunk) for chunk in column.chunks)
        if expanded > max_decoded_bytes:
            raise PayloadTooLarge(
                f"the Arrow body's columns expand to more than {max_decoded_bytes} bytes "
                "(--max-decoded-bytes)"
            )
    return table


def decode_arrow_body(data: bytes, max_decoded_bytes: int) -> pa.Table:
    """The table of an Arrow IPC stream, refused before it is decoded if it would take more
    than ``max_decoded_bytes`` bytes, dictionary and run-end encoded columns expanded to
    plain ones (and refused before that if they would pass the cap).

    Raises:
        PayloadTooLarge: the stream decodes to, or its columns expand to, more than the cap
            (a :class:`RestError`, code 13, HTTP 413).
        RestError: code 13 (400) for a body that is not an Arrow IPC stream, or that nests a
            dictionary or run-end encoded type inside another type.
    """
    import pyarrow as pa

    table = _read_checked(data, max_decoded_bytes)
    for i, field in enumerate(table.schema):
        if _encoded(field.type):
            chunks = [_decoded(chunk) for chunk in table.column(i).chunks]
            column = pa.chunked_array(chunks, type=field.type.value_type)
            table = table.set_column(i, field.with_type(field.type.value_type), column)
    return table


def _decoded(chunk: pa.Array) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(chunk.type):
        return chunk.dictionary_decode()
    return pc.run_end_decode(chunk)
