"""Reading deletion vectors from their descriptors (protocol "Deletion Vectors": "Deletion
Vector Descriptor Schema", "Deletion Vector File Storage Format", "Deletion Vector Format"),
for :meth:`deltalog.DeltaTable.deletion_vectors` and ``table.inspect``.

Scans apply deletion vectors in the native core; this module only materialises them for
users who ask to see them. The bitmaps are decoded by the core's ``dv_deserialize``.
"""

from __future__ import annotations

import uuid
import zlib
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from deltalog import _native
from deltalog.exceptions import CorruptDeletionVectorError, CorruptLogError

if TYPE_CHECKING:
    from deltalog.table.delta_table import DeltaTable


def relative_dv_path(descriptor: dict[str, Any]) -> str | None:
    """The table-relative path of a ``u`` (UUID-named) deletion vector file; None for inline
    (``i``) and absolute (``p``) ones. "Deletion Vector Descriptor Schema": the last 20
    characters are the Z85-encoded UUID, anything before them a directory prefix."""
    if descriptor.get("storage_type") != "u":
        return None
    text: str = descriptor["path_or_inline_dv"]
    prefix, encoded = text[:-20], text[-20:]
    name = f"deletion_vector_{uuid.UUID(bytes=_native.z85_decode(encoded))}.bin"
    return f"{prefix}/{name}" if prefix else name


def _read(table: DeltaTable, location: str) -> bytes:
    """The bytes of a file of the table (a table-relative path or an absolute URI)."""
    if "://" not in location and not location.startswith("/"):
        root = table.table_uri.rstrip("/")
        location = f"{root}/{location}"
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        with open(unquote(parsed.path) if parsed.scheme else location, "rb") as f:
            return f.read()
    import pyarrow.fs as pafs

    filesystem, path = pafs.FileSystem.from_uri(location)
    with filesystem.open_input_file(path) as f:
        data: bytes = f.read()
    return data


def deleted_rows(table: DeltaTable, data_file: str, descriptor: dict[str, Any]) -> list[int]:
    """The row indexes a deletion vector deletes from ``data_file`` (sorted)."""
    kind = descriptor["storage_type"]
    size = descriptor["size_in_bytes"]
    if kind == "i":
        blob = _native.z85_decode(descriptor["path_or_inline_dv"])[:size]
        where = data_file
    else:
        if kind == "u":
            location = relative_dv_path(descriptor)
            assert location is not None
        elif kind == "p":
            location = descriptor["path_or_inline_dv"]
        else:
            raise CorruptLogError(
                f"deletion vector of {data_file} has storage type {kind!r}",
                rule='"Deletion Vector Descriptor Schema": storageType is u, i or p',
            )
        content = _read(table, location)
        offset = descriptor.get("offset") or 1
        # "Deletion Vector File Storage Format": a 4-byte big-endian size, the vector, then
        # its CRC-32, also big-endian.
        stored = int.from_bytes(content[offset : offset + 4], "big")
        blob = content[offset + 4 : offset + 4 + stored]
        crc = content[offset + 4 + stored : offset + 8 + stored]
        if len(blob) != stored or stored != size or crc != zlib.crc32(blob).to_bytes(4, "big"):
            raise CorruptDeletionVectorError(
                f"deletion vector of {data_file} in {location} does not match its descriptor "
                '(size or CRC-32; "Deletion Vector File Storage Format")',
                file=location,
            )
        where = location
    rows = _native.dv_deserialize(blob)
    if len(rows) != descriptor["cardinality"]:
        raise CorruptDeletionVectorError(
            f"deletion vector of {data_file} ({where}) deletes {len(rows)} rows, its "
            f'descriptor says {descriptor["cardinality"]} ("Deletion Vector Descriptor Schema")',
            file=where,
        )
    return sorted(rows)
